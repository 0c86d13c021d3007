import {
  type Address,
  decodeEventLog,
  type Hex,
  numberToHex,
  type PublicClient,
  toEventSelector,
  withRetry,
} from "viem";
import { RPC_RETRY_COUNT, rpcRetryDelay } from "./client.ts";
import { stakerAbi } from "./staker-abi.ts";

const STAKER_EVENTS = ["Stake", "Withdraw", "Claim"] as const;
const topics = STAKER_EVENTS.map((name) => {
  const event = stakerAbi.find((item) => item.type === "event" && item.name === name);
  if (event?.type !== "event") throw new Error(`staker ABI has no ${name} event`);
  return toEventSelector(event);
});

/** A Stake, Withdraw or Claim log with its position in the chain and its decoded arguments. */
export type StakerLog = ReturnType<typeof decodeStakerLog>;

interface RpcLog {
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  topics: [Hex, ...Hex[]];
  data: Hex;
  removed?: boolean;
}

function decodeStakerLog(log: RpcLog) {
  const decoded = decodeEventLog({
    abi: stakerAbi,
    topics: log.topics,
    data: log.data,
    strict: true,
  });
  return {
    blockNumber: BigInt(log.blockNumber),
    blockHash: log.blockHash.toLowerCase() as Hex,
    transactionHash: log.transactionHash.toLowerCase() as Hex,
    logIndex: Number(log.logIndex),
    decoded,
  };
}

/** The provider refused a log query for its size or block span; a smaller one may pass. */
export class LogRangeTooLarge extends Error {
  override name = "LogRangeTooLarge";
}

// Providers word this differently (Alchemy, Infura, QuickNode, geth, erigon, anvil).
const tooLargePattern =
  /more than \d+ results|response size|too large|block range|range (is )?too|max(imum)? (block )?range|too many (logs|results)/i;

function isTooLarge(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const text = `${error.message} ${"details" in error ? String(error.details) : ""}`;
  return tooLargePattern.test(text);
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
  shrink() {
    if (this.span <= 1) return false;
    this.refused = Math.min(this.refused ?? this.span, this.span);
    this.answersSinceRefusal = 0;
    this.span = Math.max(1, Math.floor(this.span / 2));
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
): Promise<StakerLog[]> {
  const out: StakerLog[] = [];
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
              params: [
                {
                  address: staker,
                  fromBlock: numberToHex(start),
                  toBlock: numberToHex(end),
                  topics: [topics],
                },
              ],
            },
            { retryCount: 0 },
          ) as unknown as Promise<RpcLog[]>,
        {
          retryCount: RPC_RETRY_COUNT,
          delay: rpcRetryDelay,
          shouldRetry: ({ error }) => !isTooLarge(error),
        },
      );
    } catch (error) {
      if (isTooLarge(error) && governor.shrink()) continue;
      if (isTooLarge(error))
        throw new LogRangeTooLarge(`a single block's logs were refused at ${start}`);
      throw error;
    }
    for (const log of raw) if (!log.removed) out.push(decodeStakerLog(log));
    governor.grow(raw.length);
    start = end + 1n;
  }
  return out;
}

function minBigint(a: bigint, b: bigint) {
  return a < b ? a : b;
}
