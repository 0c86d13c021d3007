import { type Address, type Hex, numberToHex, type PublicClient, withRetry } from "viem";
import { errorSummary } from "../../lib/log.ts";
import { RPC_RETRY_COUNT, rpcRetryDelay } from "./client.ts";
import { lacksBlock, NodeBehind } from "./node-behind.ts";
import { readRangeRefusal } from "./range-refusals.ts";
import { decodeStakerEvent, STAKER_TOPICS } from "./staker-log-decoder.ts";

/** A Stake, Withdraw or Claim log with its position in the chain and its decoded arguments. */
export type StakerLog = ReturnType<typeof decodeStakerLog>;

export interface RpcLog {
  address: Address;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  /** Newer nodes (geth 1.16, reth, anvil) give the block's time with each log. */
  blockTimestamp?: Hex;
  topics: [Hex, ...Hex[]];
  data: Hex;
  removed?: boolean;
}

export function decodeStakerLog(log: RpcLog) {
  const decoded = decodeStakerEvent(log.topics, log.data);
  return {
    blockNumber: BigInt(log.blockNumber),
    blockHash: log.blockHash.toLowerCase() as Hex,
    transactionHash: log.transactionHash.toLowerCase() as Hex,
    logIndex: Number(log.logIndex),
    blockTimestamp: log.blockTimestamp === undefined ? undefined : BigInt(log.blockTimestamp),
    decoded,
  };
}

/**
 * Even one block's staker logs are more than the node returns in one answer. No range can
 * shrink below a block, so this stops the range instead of retrying it forever.
 */
export class LogRangeTooLarge extends Error {
  override name = "LogRangeTooLarge";
}

/**
 * Whether an eth_getLogs failure says the answer is or would be too large, so a smaller range
 * may pass (see range-refusals.ts for the wordings).
 */
export function isLogAnswerTooLarge(error: unknown): boolean {
  return readRangeRefusal(error) !== undefined;
}

/**
 * How many blocks one eth_getLogs asks for. It halves when the provider refuses a range and
 * doubles again after small answers; it is a per-process hint, not shared state.
 */
export class LogRangeGovernor {
  /** The smallest span refused lately; growth stays below it for a while. */
  private refused: number | undefined;
  private answersSinceRefusal = 0;

  constructor(
    private readonly max: number,
    private span = max,
  ) {}
  get current() {
    return this.span;
  }
  /**
   * A query over `refusedSpan` blocks (the current span when absent) was refused: the next ones
   * ask for half of it. False when a single block was refused: nothing smaller exists.
   */
  shrink(refusedSpan: bigint = BigInt(this.span)) {
    // Judged on the refused query itself: concurrent jobs share the span, which another job's
    // refusal may already have shrunk below this one's.
    const refused = Number(refusedSpan);
    if (refused <= 1) return false;
    this.refused = Math.min(this.refused ?? refused, refused);
    this.answersSinceRefusal = 0;
    this.span = Math.max(1, Math.min(this.span, Math.floor(refused / 2)));
    return true;
  }
  /**
   * The node named a span that passes (a suggested range, or its cap) for a query over
   * `refusedSpan` blocks: the next ones ask for no more than that. False when it is no smaller
   * than the refused query (a node may suggest the very range it refused).
   */
  shrinkTo(passingSpan: bigint, refusedSpan: bigint) {
    if (passingSpan >= refusedSpan) return false;
    const passing = Number(passingSpan);
    this.refused = Math.min(this.refused ?? passing + 1, passing + 1);
    this.answersSinceRefusal = 0;
    this.span = Math.max(1, Math.min(this.span, passing));
    return true;
  }
  grow(resultCount: number) {
    // A provider's cap rarely moves, so probing above a refused span waits for many answers.
    if (this.refused !== undefined && ++this.answersSinceRefusal >= REPROBE_AFTER) {
      this.refused = undefined;
    }
    const ceiling = this.refused === undefined ? this.max : this.refused - 1;
    if (resultCount < 2_000) this.span = Math.max(1, Math.min(ceiling, this.span * 2));
  }
}

const REPROBE_AFTER = 200;

/** Every staker event in [from, to], in chain order. */
export async function fetchStakerLogs(
  client: PublicClient,
  staker: Address,
  from: bigint,
  to: bigint,
  governor: LogRangeGovernor,
  /** The setting naming the node, for an error: RPC_URL, or RPC_CHECK_URL for the check node. */
  source = "RPC_URL",
): Promise<StakerLog[]> {
  const filter = { address: staker, topics: [STAKER_TOPICS] };
  const raw = await fetchLogs(client, filter, from, to, governor, "the staker's logs", source);
  return raw.map(decodeStakerLog);
}

/** An eth_getLogs filter without its block range. */
export interface LogFilter {
  address: Address | Address[];
  topics: (Hex | Hex[] | null)[];
}

/**
 * Every log of `filter` in [from, to] (removed ones left out), asked in spans the governor
 * sizes: a span the node refuses or answers too large for is halved and asked again.
 * `what` names the logs in the error when a single block is too large.
 */
export async function fetchLogs(
  client: PublicClient,
  filter: LogFilter,
  from: bigint,
  to: bigint,
  governor: LogRangeGovernor,
  what: string,
  source = "RPC_URL",
): Promise<RpcLog[]> {
  const out: RpcLog[] = [];
  let start = from;
  while (start <= to) {
    const end = minBigint(to, start + BigInt(governor.current) - 1n);
    let raw: RpcLog[];
    try {
      // Retried here rather than in the transport, so a refused range shrinks at once instead
      // of being asked for again six times.
      raw = await withRetry(
        () =>
          client.request(
            {
              method: "eth_getLogs",
              params: [{ ...filter, fromBlock: numberToHex(start), toBlock: numberToHex(end) }],
            },
            { retryCount: 0 },
          ) as unknown as Promise<RpcLog[]>,
        {
          retryCount: RPC_RETRY_COUNT,
          delay: rpcRetryDelay,
          shouldRetry: ({ error }) => !isLogAnswerTooLarge(error) && !lacksBlock(error),
        },
      );
    } catch (error) {
      // A node behind the range (geth and reth refuse a range past their head) waits for it.
      if (lacksBlock(error)) throw new NodeBehind(end, undefined, { cause: error });
      const refusal = readRangeRefusal(error);
      if (!refusal) throw error;
      const refusedSpan = end - start + 1n;
      if (
        refusal.passingSpan !== undefined &&
        governor.shrinkTo(refusal.passingSpan, refusedSpan)
      ) {
        continue;
      }
      if (governor.shrink(refusedSpan)) continue;
      throw new LogRangeTooLarge(
        `${what} of block ${start} alone are more than the node at ${source} returns in one answer (${errorSummary(error)}); use a node with a larger eth_getLogs limit`,
      );
    }
    for (const log of raw) if (!log.removed) out.push(log);
    governor.grow(raw.length);
    start = end + 1n;
  }
  return out;
}

function minBigint(a: bigint, b: bigint) {
  return a < b ? a : b;
}
