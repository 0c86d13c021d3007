/**
 * The fetch stage: a block range in, the rows to write out. Everything it asks goes to the node;
 * what it needs to know besides is handed in (FetchDeps), and what it returns is written by the
 * caller (store/range-writes.ts).
 */
import type { Block, Hex, PublicClient } from "viem";
import type { CitizenRow, StakerEventRow } from "../../db/schema.ts";
import { isCitizenAsset } from "../../lib/vocabulary.ts";
import { readsGoByHash } from "../chain/block-pin.ts";
import type { StakerLogsUnsettled } from "../chain/block-receipts.ts";
import { type CheckNode, fetchCheckNodeLogs } from "../chain/check-node.ts";
import type { CitizenKey } from "../chain/citizen-reads.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import { fetchStakerLogs, type LogRangeGovernor, type StakerLog } from "../chain/logs.ts";
import { fetchStakerTransfers } from "../chain/transfer-check.ts";
import { toEventRow } from "../project/event-rows.ts";
import { stakeContexts } from "../project/stake-context.ts";
import type { RangeWrite } from "../store/range-writes.ts";
import {
  checkLinked,
  checkStillThere,
  ReorgDetected,
  range,
  readHeaders,
} from "./block-headers.ts";
import { checkedLogs, type LogCheck } from "./checked-logs.ts";
import type { CitizenReads } from "./citizen-read-cache.ts";
import { citizensOf, stakeFacts } from "./range-stakes.ts";

export { ReorgDetected } from "./block-headers.ts";
export type { LogCheck } from "./checked-logs.ts";

/**
 * What the fetch stage is handed: the node's clients and the staker's contracts, and what it
 * needs to know of the rest of the system as functions, so the stage itself asks neither
 * Postgres nor Redis: the citizens the tables hold already, and how citizens are read once
 * (Redis claims across processes for the chunk workers, an in-process cache for the follower).
 */
export interface FetchDeps {
  client: PublicClient;
  /** eth_getLogs goes alone: an oversized answer must not fail the requests batched with it. */
  logClient: PublicClient;
  /** eth_getBlockReceipts goes alone too, under its own answer cap (block-receipts.ts). */
  receiptsClient: PublicClient;
  contracts: StakerContracts;
  governor: LogRangeGovernor;
  /** The citizens of `keys` the tables hold already: those are not read again. */
  knownCitizens: (keys: CitizenKey[]) => Promise<CitizenRow[]>;
  /** Citizens read once across every worker process (claim before read). */
  citizenReads: CitizenReads;
  /** Waits while this process's other slices hold too many events (event-budget.ts). */
  admitEvents?: (events: number) => Promise<void>;
  /**
   * The most events the range may hold: it ends where its counted logs fill them (countedLogs),
   * cut short after the last whole block within them (at least one block) when a span passed
   * them, and the caller fetches the rest as another range.
   */
  maxEvents?: number;
  /**
   * With `maxEvents`: how many blocks each eth_getLogs of the staker asks while the range's
   * logs are counted (event-budget.ts), and what each held. Without it the range is asked whole.
   */
  logSpans?: LogSpans;
  /** A second node (RPC_CHECK_URL) whose answers a chunk's must agree with. */
  checkNode?: CheckNode;
}

export interface FetchRequest {
  from: bigint;
  to: bigint;
  /**
   * Above the finality boundary: read every header, check that each links to the one before
   * and that every log belongs to them, and keep every hash (a reorg finds its fork point).
   */
  dense?: boolean;
}

/** A range's rows, and what its missing-log check cost and corrected. */
export type FetchedRange = RangeWrite & {
  logCheck: LogCheck;
  /**
   * A dense range cut short: nothing settles this block's staker logs, so the rows stop at the
   * block before it. The caller writes them and holds there.
   */
  held?: StakerLogsUnsettled;
};

/**
 * Everything a block range adds to the tables, fetched in one straight line: headers, logs,
 * a check that the answer left out no block's logs, the reads they need, rows built by pure
 * functions, and (a chunk, or reads by number) the last header read again. If that header
 * changed, the chain moved during the fetch and nothing is returned.
 *
 * The missing-log check: a dense range has every header, so each bloom is checked and a block
 * it admits staker logs in is settled by its receipts (missing-logs.ts); a chunk reads only its
 * ends, and its staker logs are matched against a second node's (check-node.ts, with
 * RPC_CHECK_URL) or else against the staker's token transfers (transfer-check.ts): a few
 * eth_getLogs whatever its length.
 *
 * With `maxEvents`, the range is the longest from its first block whose staker logs fit them
 * (whole blocks, at least one): the logs are counted before the rest is asked (countedLogs).
 */
export async function fetchRange(deps: FetchDeps, request: FetchRequest): Promise<FetchedRange> {
  const { client, contracts } = deps;
  const { from, dense } = request;
  const checkNode = dense ? undefined : deps.checkNode;
  const counting = deps.maxEvents;
  // Counted first: the staker's logs are asked span by span while the budget has room for the
  // next span at the density seen, and the range ends there. The first span's headers and check
  // go beside it, the rest's once the count is known.
  const firstEnd = counting === undefined || dense ? request.to : spanEnd(deps, from, request.to);
  const [headers, first, firstTransfers, firstCheck] = await Promise.all([
    readHeaders(client, dense ? range(from, request.to) : [from, firstEnd]),
    fetchStakerLogs(deps.logClient, contracts.staker, from, firstEnd, deps.governor),
    dense || checkNode
      ? []
      : fetchStakerTransfers(deps.logClient, contracts, from, firstEnd, deps.governor),
    checkNode && fetchCheckNodeLogs(checkNode, contracts.staker, from, firstEnd),
  ]);
  deps.logSpans?.counted(Number(firstEnd - from + 1n), first.length);
  const { answer, reached } = await countedLogs(deps, first, from, firstEnd, request.to);
  const extended = reached > firstEnd;
  const [moreTransfers, moreCheck, lastHeader] = await Promise.all([
    dense || checkNode || !extended
      ? []
      : fetchStakerTransfers(deps.logClient, contracts, firstEnd + 1n, reached, deps.governor),
    checkNode && extended
      ? fetchCheckNodeLogs(checkNode, contracts.staker, firstEnd + 1n, reached)
      : undefined,
    extended ? readHeaders(client, [reached]) : undefined,
  ]);
  for (const [number, header] of lastHeader ?? []) headers.set(number, header);
  const checkAnswer = firstCheck && {
    logs: moreCheck ? [...firstCheck.logs, ...moreCheck.logs] : firstCheck.logs,
    lastHash: moreCheck ? moreCheck.lastHash : firstCheck.lastHash,
  };
  const checking = checkedLogs(deps, headers, answer, {
    from,
    dense,
    transfers: moreTransfers.length > 0 ? [...firstTransfers, ...moreTransfers] : firstTransfers,
    checkAnswer,
    last: headers.get(reached)!,
  });
  // A dense range's reads go beside its missing-log check (a block's receipts, read and proven
  // against its receiptsRoot: a round trip and a trie at the head) instead of after it: the
  // check almost always passes the answer as it came, and then these are the range's rows. One
  // that settles a block otherwise, or holds at one, has them built again from what it passed.
  const early = dense
    ? rowsOf(deps, { from, to: reached, dense }, new Map(headers), answer)
    : undefined;
  early?.catch(() => undefined);
  const checked = await checking;
  const { logCheck, held } = checked;
  // Held at a block: the range ends before it (checkedLogs gave only the logs before it). Cut
  // short at the most events: it ends at the last block the kept logs name, whose hash they carry.
  const cut = counting === undefined ? undefined : cutAtEvents(checked.logs, counting);
  const logs = cut ? checked.logs.slice(0, cut.logs) : checked.logs;
  const to = cut ? cut.block : held ? held.blockNumber - 1n : reached;
  if (held || cut) for (const number of headers.keys()) if (number > to) headers.delete(number);
  const lastHash = cut ? logs.at(-1)!.blockHash : headers.get(to)!.hash!;

  // A chunk's last block read again once its logs are in shows the chain stood still under them;
  // with reads by hash (held to that block) it goes beside them, so it adds no wait, while reads
  // by number must come before it (below).
  const pinned = !dense && (await readsGoByHash(client));
  const stoodStill = pinned ? checkStillThere(client, to, lastHash) : undefined;
  stoodStill?.catch(() => undefined);
  const rows =
    early && !held && !cut && logCheck.corrected === 0
      ? await early
      : await rowsOf(deps, { from, to, dense, lastHash }, headers, logs);

  // A dense range is held to its own headers: each was read, each links to the one before, every
  // log carries its header's hash, a bloom that admits a staker log the answer lacks is asked
  // again by that hash, and every read names its block by hash. Its rows are those very blocks',
  // whatever the chain does next, and reading the last header again would only say whether that
  // block was still the chain's a moment later, which no write can keep (the chain may move right
  // after it): the follower's next write claims it as its parent, and the fork check compares it,
  // both exactly. Reads by number (a node that refuses hashes) are held to no block, so there,
  // and for a chunk (two headers, logs by number), the re-read still shows the chain stood still.
  const byHash = await readsGoByHash(client);
  if (!(dense && byHash)) {
    // A read refused its hash and went by number: the early re-read came before it.
    await (stoodStill && byHash ? stoodStill : checkStillThere(client, to, lastHash));
  }
  return {
    fromBlock: from,
    toBlock: to,
    ...rows,
    logCheck,
    held: cut ? undefined : held,
  };
}

/**
 * The rows of a range whose end and staker logs are known: its block hashes (a dense range's
 * checked to link, and its logs to carry them), its events, the citizens they meet and their
 * stakes. `lastHash` is the last block's (its header's unless given: a cut range's last log's).
 */
async function rowsOf(
  deps: FetchDeps,
  range: { from: bigint; to: bigint; dense?: boolean; lastHash?: Hex },
  headers: Map<bigint, Block>,
  logs: StakerLog[],
) {
  const { from, to, dense } = range;
  const lastHash = range.lastHash ?? headers.get(to)!.hash!;
  const blockHashes = new Map<bigint, string>();
  if (from > 0n) blockHashes.set(from - 1n, headers.get(from)!.parentHash.toLowerCase());
  for (const [number, header] of headers) blockHashes.set(number, header.hash!.toLowerCase());
  if (dense) checkLinked(headers, from, to);
  for (const log of logs) {
    const known = blockHashes.get(log.blockNumber);
    if (dense && known !== log.blockHash) {
      throw new ReorgDetected(`a log of block ${log.blockNumber} is from another branch`);
    }
    blockHashes.set(log.blockNumber, log.blockHash);
  }
  await deps.admitEvents?.(logs.length);
  const events = logs.map((log) => toEventRow(log, deps.contracts));
  const stakeEvents = events.filter(isCitizenStake);
  const contexts = stakeContexts(stakeEvents, events, to);
  const citizens = citizensOf(deps, stakeEvents, { blockNumber: to, blockHash: lastHash });
  const [{ read, readFailures }, stakes] = await Promise.all([
    citizens.rows,
    stakeFacts(deps, { stakeEvents, contexts, citizens, headers, logs, blockHashes }),
  ]);
  return { events, stakes, citizens: read, blockHashes, readFailures };
}

/** How many blocks the staker's next eth_getLogs asks while a range's logs are counted. */
export interface LogSpans {
  blocks(): number;
  /** A span of `blocks` held `events`. */
  counted(blocks: number, events: number): void;
}

function spanEnd(deps: FetchDeps, from: bigint, to: bigint) {
  const end = from + BigInt(deps.logSpans?.blocks() ?? Number.MAX_SAFE_INTEGER) - 1n;
  return end < to ? end : to;
}

/**
 * The staker's logs from a range's first span on, asked a span at a time while the most events
 * have room for the next span at the density seen so far, up to the range's end: only the logs,
 * so a range starts long however thin or dense the chain is, and the rest of what it needs is
 * asked once its end is known.
 */
async function countedLogs(
  deps: FetchDeps,
  first: StakerLog[],
  from: bigint,
  firstEnd: bigint,
  to: bigint,
) {
  let [answer, reached] = [first, firstEnd];
  const max = deps.maxEvents ?? 0;
  while (reached < to && answer.length < max) {
    // The blocks the room left fills at the density seen (any number while none was seen).
    const room = (max - answer.length) * Number(reached - from + 1n);
    const fits = answer.length === 0 ? Number.MAX_SAFE_INTEGER : Math.floor(room / answer.length);
    if (fits < 1) break;
    const end = minBlock(spanEnd(deps, reached + 1n, to), reached + BigInt(fits));
    const more = await fetchStakerLogs(
      deps.logClient,
      deps.contracts.staker,
      reached + 1n,
      end,
      deps.governor,
    );
    deps.logSpans?.counted(Number(end - reached), more.length);
    answer = more.length > 0 ? [...answer, ...more] : answer;
    reached = end;
  }
  return { answer, reached };
}

const minBlock = (a: bigint, b: bigint) => (a < b ? a : b);

/**
 * Where a range's logs (in chain order) are cut to hold at most `max` events in whole blocks:
 * after the last block wholly within them, or after the first block with logs when that one
 * alone holds more. Undefined when nothing needs cutting.
 */
export function cutAtEvents(logs: { blockNumber: bigint }[], max: number) {
  if (logs.length <= max) return undefined;
  const partial = logs[max]!.blockNumber;
  let kept = max;
  while (kept > 0 && logs[kept - 1]!.blockNumber === partial) kept--;
  if (kept === 0) {
    // One block past the budget goes alone, whole.
    while (kept < logs.length && logs[kept]!.blockNumber === partial) kept++;
    if (kept === logs.length) return undefined;
  }
  return { block: logs[kept - 1]!.blockNumber, logs: kept };
}

const isCitizenStake = (event: StakerEventRow) =>
  event.event === "Stake" && isCitizenAsset(event.assetType);

/** The fetch stage as the roles hold it: a range in, its rows out; the event budget per call. */
export type FetchStage = (
  request: FetchRequest,
  options?: Pick<FetchDeps, "admitEvents" | "maxEvents" | "logSpans">,
) => Promise<FetchedRange>;

/** Builds the fetch stage once from what it is handed (see FetchDeps). */
export function createFetchStage(deps: FetchDeps): FetchStage {
  return (request, options) => fetchRange({ ...deps, ...options }, request);
}
