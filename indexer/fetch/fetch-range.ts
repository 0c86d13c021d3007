import type { Block, Hex, PublicClient } from "viem";
import type { CitizenRow, CitizenStakeRow, StakerEventRow } from "../../db/schema.ts";
import { isCitizenAsset } from "../../lib/vocabulary.ts";
import { type BlockAt, readsGoByHash } from "../chain/block-pin.ts";
import type { StakerLogsUnsettled } from "../chain/block-receipts.ts";
import {
  agreeWithCheckNode,
  type CheckNode,
  CheckNodeOutOfStep,
  fetchCheckNodeLogs,
} from "../chain/check-node.ts";
import { type CitizenKey, readCitizens } from "../chain/citizen-reads.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import { readHandFlag } from "../chain/hand-flag.ts";
import {
  fetchStakerLogs,
  type LogRangeGovernor,
  type RpcLog,
  type StakerLog,
} from "../chain/logs.ts";
import { checkNoStakerLogMissing } from "../chain/missing-logs.ts";
import { behindAs } from "../chain/node-behind.ts";
import { readStakes, tryReadStakes } from "../chain/stake-reads.ts";
import { checkStakerTransfersLogged, fetchStakerTransfers } from "../chain/transfer-check.ts";
import { ViewMemo } from "../chain/view-memo.ts";
import type { CitizenReads } from "../chunk-workers/citizen-claims.ts";
import { citizenRowOf } from "../project/citizen-row.ts";
import { type Season, toEventRow } from "../project/event-rows.ts";
import { readBlocks, type StakeContext, stakeContexts } from "../project/stake-context.ts";
import { AmbiguousHandClaim, buildCitizenStake } from "../project/stake-facts.ts";
import { proveStake } from "../project/stake-proof.ts";
import type { IndexerStore, RangeWrite } from "../store/index.ts";
import { explainConfigurations } from "./stake-configuration.ts";

export interface RangeIndexerDeps {
  client: PublicClient;
  /** eth_getLogs goes alone: an oversized answer must not fail the requests batched with it. */
  logClient: PublicClient;
  /** eth_getBlockReceipts goes alone too, under its own answer cap (block-receipts.ts). */
  receiptsClient: PublicClient;
  store: IndexerStore;
  contracts: StakerContracts;
  governor: LogRangeGovernor;
  /** Citizens read once across every worker process (claim before read). */
  citizenReads: CitizenReads;
  /** Waits while this process's other chunks hold too many events (event-budget.ts). */
  admitEvents?: (events: number) => Promise<void>;
  /** A second node (RPC_CHECK_URL) whose answers a chunk's must agree with. */
  checkNode?: CheckNode;
}

/** The chain moved under a fetch (a reorg near the head): the range is fetched again. */
export class ReorgDetected extends Error {
  override name = "ReorgDetected";
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

/** What a range's missing-log check did, in blocks. */
export interface LogCheck {
  /**
   * Blocks asked again by hash that held no more staker logs than the answer: bloom false
   * positives (dense) or plain token transfers to or from the staker (the Transfer check).
   */
  askedAgain: number;
  /** Blocks whose receipts were read and matched their header's receiptsRoot. */
  receiptsChecked: number;
  /** Blocks whose staker logs the answer had wrong, written as the check settled them. */
  corrected: number;
  /** Blocks the check node (RPC_CHECK_URL) gave otherwise than the answer (chunks). */
  disputed: number;
}

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
 */
export async function fetchRange(
  deps: RangeIndexerDeps,
  request: FetchRequest,
): Promise<FetchedRange> {
  const { client, contracts } = deps;
  const { from, dense } = request;
  const checkNode = dense ? undefined : deps.checkNode;
  const [headers, answer, transfers, checkAnswer] = await Promise.all([
    readHeaders(client, dense ? range(from, request.to) : [from, request.to]),
    fetchStakerLogs(deps.logClient, contracts.staker, from, request.to, deps.governor),
    dense || checkNode
      ? []
      : fetchStakerTransfers(deps.logClient, contracts, from, request.to, deps.governor),
    checkNode && fetchCheckNodeLogs(checkNode, contracts.staker, from, request.to),
  ]);
  const { logs, logCheck, held } = await checkedLogs(deps, headers, answer, {
    from,
    dense,
    transfers,
    checkAnswer,
    last: headers.get(request.to)!,
  });
  // Held at a block: the range ends before it (checkedLogs gave only the logs before it).
  const to = held ? held.blockNumber - 1n : request.to;
  if (held) for (const number of headers.keys()) if (number > to) headers.delete(number);
  const first = headers.get(from)!;
  const last = headers.get(to)!;

  const blockHashes = new Map<bigint, string>();
  if (from > 0n) blockHashes.set(from - 1n, first.parentHash.toLowerCase());
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
  const events = logs.map((log) => toEventRow(log, contracts));
  const stakeEvents = events.filter(isCitizenStake);
  const contexts = stakeContexts(stakeEvents, events, to);
  const { citizens, read, readFailures } = await citizensOf(deps, stakeEvents, {
    blockNumber: to,
    blockHash: last.hash!,
  });
  const stakes = await stakeFacts(deps, {
    stakeEvents,
    contexts,
    citizens,
    headers,
    logs,
    blockHashes,
  });

  // A dense range is held to its own headers: each was read, each links to the one before, every
  // log carries its header's hash, a bloom that admits a staker log the answer lacks is asked
  // again by that hash, and every read names its block by hash. Its rows are those very blocks',
  // whatever the chain does next, and reading the last header again would only say whether that
  // block was still the chain's a moment later, which no write can keep (the chain may move right
  // after it): the follower's next write claims it as its parent, and the fork check compares it,
  // both exactly. Reads by number (a node that refuses hashes) are held to no block, so there,
  // and for a chunk (two headers, logs by number), the re-read still shows the chain stood still.
  if (!(dense && (await readsGoByHash(client)))) {
    // A node without the block now (another behind a load balancer) says nothing of a change.
    const again = await behindAs(to, () => client.getBlock({ blockNumber: to }));
    if (again.hash !== last.hash) throw new ReorgDetected(`block ${to} changed during the fetch`);
  }
  return {
    fromBlock: from,
    toBlock: to,
    events,
    stakes,
    citizens: read,
    blockHashes,
    readFailures,
    logCheck,
    held,
  };
}

const NO_CHECK: LogCheck = { askedAgain: 0, receiptsChecked: 0, corrected: 0, disputed: 0 };

/** The range's staker logs once its missing-log check has passed them (see fetchRange). */
async function checkedLogs(
  deps: RangeIndexerDeps,
  headers: Map<bigint, Block>,
  answer: StakerLog[],
  fetched: {
    from: bigint;
    dense?: boolean;
    transfers: RpcLog[];
    checkAnswer?: { logs: StakerLog[]; lastHash: Hex };
    last: Block;
  },
): Promise<{ logs: StakerLog[]; logCheck: LogCheck; held?: StakerLogsUnsettled }> {
  const { client, contracts } = deps;
  if (fetched.dense) {
    const { logs, check, unsettled } = await checkNoStakerLogMissing(
      deps,
      contracts.staker,
      headers.values(),
      answer,
    );
    const logCheck = { ...NO_CHECK, ...check, corrected: check.fromReceipts };
    if (!unsettled) return { logs, logCheck };
    // A block that left the chain has no receipts either: that is a reorg, not a lying node.
    const now = await client.getBlock({ blockNumber: unsettled.blockNumber });
    if (now.hash !== headers.get(unsettled.blockNumber)?.hash) {
      throw new ReorgDetected(`block ${unsettled.blockNumber} changed during the fetch`);
    }
    // Nothing before it to write: the range is the held block's.
    if (unsettled.blockNumber === fetched.from) throw unsettled;
    return { logs, logCheck, held: unsettled };
  }
  const { checkAnswer, last } = fetched;
  if (deps.checkNode && checkAnswer) {
    if (checkAnswer.lastHash !== last.hash) {
      throw new CheckNodeOutOfStep(
        `the check node (RPC_CHECK_URL) has ${checkAnswer.lastHash} as block ${last.number}, the node at RPC_URL ${last.hash}; the chunk is fetched again`,
      );
    }
    const { logs, comparison } = await agreeWithCheckNode(deps, deps.checkNode, contracts.staker, {
      own: answer,
      check: checkAnswer.logs,
    });
    return {
      logs,
      logCheck: {
        ...NO_CHECK,
        receiptsChecked: comparison.settledByReceipts,
        corrected: comparison.corrected,
        disputed: comparison.disputed,
      },
    };
  }
  const { logs, ...check } = await checkStakerTransfersLogged(
    deps,
    contracts,
    fetched.transfers,
    answer,
  );
  return { logs, logCheck: { ...NO_CHECK, ...check } };
}

const isCitizenStake = (event: StakerEventRow) =>
  event.event === "Stake" && isCitizenAsset(event.assetType);

function range(from: bigint, to: bigint): bigint[] {
  const numbers: bigint[] = [];
  for (let n = from; n <= to; n++) numbers.push(n);
  return numbers;
}

/** The headers of `numbers`; a block the node does not have yet throws NodeBehind. */
async function readHeaders(client: PublicClient, numbers: bigint[]) {
  const unique = [...new Set(numbers)];
  const headers = await Promise.all(
    unique.map((blockNumber) => behindAs(blockNumber, () => client.getBlock({ blockNumber }))),
  );
  return new Map<bigint, Block>(headers.map((header, i) => [unique[i]!, header]));
}

function checkLinked(headers: Map<bigint, Block>, from: bigint, to: bigint) {
  for (let n = from + 1n; n <= to; n++) {
    if (headers.get(n)!.parentHash !== headers.get(n - 1n)!.hash) {
      throw new ReorgDetected(`block ${n} does not link to block ${n - 1n}`);
    }
  }
}

const keyOf = (season: number, citizenId: bigint) => `${season}:${citizenId}`;

async function citizensOf(
  deps: RangeIndexerDeps,
  stakeEvents: StakerEventRow[],
  block: Required<BlockAt>,
): Promise<{
  citizens: Map<string, CitizenRow>;
  /** The citizens read now: the others are in the tables already. */
  read: CitizenRow[];
  readFailures: RangeWrite["readFailures"];
}> {
  const keys = new Map<string, CitizenKey>();
  for (const event of stakeEvents) {
    const season = event.citizenSeason as Season;
    keys.set(keyOf(season, event.citizenId!), { season, citizenId: event.citizenId! });
  }
  const found = new Map<string, CitizenRow>();
  for (const row of await deps.store.knownCitizens([...keys.values()])) {
    found.set(keyOf(row.season, row.citizenId), row);
  }
  const missing = [...keys].filter(([key]) => !found.has(key)).map(([, key]) => key);
  const readFailures: RangeWrite["readFailures"] = [];
  // A citizen's components never change, so any block after its mint will do.
  const readings = await deps.citizenReads.read(missing, (keys) =>
    readCitizens(deps.client, deps.contracts, keys, block),
  );
  const read: CitizenRow[] = [];
  for (const reading of readings) {
    const { row, failure } = citizenRowOf(reading, block.blockNumber);
    found.set(keyOf(row.season, row.citizenId), row);
    read.push(row);
    if (failure) readFailures.push(failure);
  }
  return { citizens: found, read, readFailures };
}

/**
 * The citizen_stakes rows of the chunk's stakes. The stakes are first read where the fewest
 * blocks answer for all of them (mostly the chunk's last block, all in the same few
 * multicalls); a stake those reads prove (stake-proof.ts) takes them, and only the rest are
 * read at their own blocks, as before, and where their figures do not give their points (the
 * owner reconfigured in the stake's block) the figures are looked for before the stake
 * (stake-configuration.ts). Every read names its block by the hash the fetch saw (the log's own
 * for a stake's block), so no node can answer it from another block's state.
 */
async function stakeFacts(
  deps: RangeIndexerDeps,
  chunk: {
    stakeEvents: StakerEventRow[];
    contexts: StakeContext[];
    citizens: Map<string, CitizenRow>;
    headers: Map<bigint, Block>;
    logs: StakerLog[];
    blockHashes: Map<bigint, string>;
  },
): Promise<CitizenStakeRow[]> {
  const memo = new ViewMemo(deps.client);
  const blocks = readBlocks(chunk.stakeEvents, pinnableContexts(chunk.contexts, chunk.blockHashes));
  const stakes = chunk.stakeEvents.map((event, i) => ({
    event,
    context: chunk.contexts[i]!,
    citizen: chunk.citizens.get(keyOf(event.citizenSeason!, event.citizenId!))!,
    readBlock: blocks[i],
  }));
  const stakeAt = ({ event, citizen }: (typeof stakes)[number], blockNumber: bigint) => ({
    season: event.citizenSeason as Season,
    citizenId: event.citizenId!,
    staker: event.account as Hex,
    componentVaultId: citizen.componentVaultId ?? 0n,
    blockNumber,
    blockHash: chunk.blockHashes.get(blockNumber) as Hex,
  });
  const readLater = stakes.filter((stake) => stake.readBlock !== undefined);
  const laterReads = await tryReadStakes(
    memo,
    deps.contracts,
    readLater.map((stake) => stakeAt(stake, stake.readBlock!)),
  );
  const blockTimes = await blockTimesOf(
    deps.client,
    readLater.map((stake) => stake.event),
    chunk,
  );
  const laterReadOf = new Map(readLater.map((stake, i) => [stake, laterReads[i]]));
  const proofs = stakes.map((stake) =>
    proveStake({
      ...stake,
      blockTime: blockTimes.get(stake.event.blockNumber),
      readAt:
        stake.readBlock === undefined
          ? undefined
          : { blockNumber: stake.readBlock, reads: laterReadOf.get(stake) },
    }),
  );
  const unproven = stakes.filter((_, i) => !proofs[i]!.proven);
  const ownReads = await readStakes(
    memo,
    deps.contracts,
    unproven.map((stake) => stakeAt(stake, stake.event.blockNumber)),
  );
  const explained = await explainConfigurations(
    deps,
    memo,
    unproven.map((stake, i) => ({
      ...stake,
      reads: ownReads[i]!,
      laterBonus: stake.context.laterBonusInBlock,
    })),
    chunk.headers,
  );
  const explainedOf = new Map(unproven.map((stake, i) => [stake, explained[i]!]));

  return Promise.all(
    stakes.map(async (stake, i) => {
      const proof = proofs[i]!;
      const input = {
        event: stake.event,
        citizen: stake.citizen,
        ...(proof.proven
          ? { reads: proof.reads, laterBonus: proof.laterBonus }
          : { ...explainedOf.get(stake)!, laterBonus: stake.context.laterBonusInBlock }),
      };
      try {
        return buildCitizenStake(input);
      } catch (error) {
        if (!(error instanceof AmbiguousHandClaim)) throw error;
        const handFlag = await readHandFlag(deps.client, deps.contracts.staker, {
          transactionHash: stake.event.transactionHash as Hex,
          citizenId: stake.event.citizenId!,
          occurrence: stake.context.occurrenceInTransaction,
        });
        return buildCitizenStake({ ...input, handFlag });
      }
    }),
  );
}

/**
 * The contexts with each stake held only through the last block, at or before its real end, whose
 * hash the fetch knows (a log's block or a header read), so its later read can name its block by
 * hash (block-pin.ts). The block before a withdraw often holds no staker log: read there, it
 * went by number. The stake's own block is always known, so every interval keeps a block.
 */
function pinnableContexts(
  contexts: readonly StakeContext[],
  blockHashes: Map<bigint, string>,
): StakeContext[] {
  const known = [...blockHashes.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return contexts.map((context) => {
    const at = lastAtOrBelow(known, context.heldThrough);
    return at === undefined ? context : { ...context, heldThrough: at };
  });
}

function lastAtOrBelow(sorted: readonly bigint[], limit: bigint): bigint | undefined {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle]! <= limit) low = middle + 1;
    else high = middle;
  }
  return low === 0 ? undefined : sorted[low - 1];
}

/**
 * The timestamps of the blocks holding these stakes: from their logs (newer nodes send each
 * log's block time) or the headers the fetch already has; the others read (cheap, and batched),
 * each checked to be the block the stake's log came from.
 */
async function blockTimesOf(
  client: PublicClient,
  stakes: StakerEventRow[],
  known: { headers: Map<bigint, Block>; logs: StakerLog[] },
): Promise<Map<bigint, bigint>> {
  const times = new Map<bigint, bigint>();
  for (const [number, header] of known.headers) times.set(number, header.timestamp);
  for (const log of known.logs) {
    if (log.blockTimestamp !== undefined) times.set(log.blockNumber, log.blockTimestamp);
  }
  const missing = stakes.filter((stake) => !times.has(stake.blockNumber));
  const read = await readHeaders(
    client,
    missing.map((stake) => stake.blockNumber),
  );
  for (const stake of missing) {
    const header = read.get(stake.blockNumber)!;
    if (header.hash!.toLowerCase() !== stake.blockHash) {
      throw new ReorgDetected(`block ${stake.blockNumber} changed during the fetch`);
    }
    times.set(stake.blockNumber, header.timestamp);
  }
  return times;
}
