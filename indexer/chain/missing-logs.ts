import type { Address, Block, Hex, PublicClient } from "viem";
import { type NodeClients, StakerLogsUnsettled, verifiedStakerLogs } from "./block-receipts.ts";
import { mayHoldStakerLogs } from "./log-bloom.ts";
import { decodeStakerLog, type RpcLog, type StakerLog } from "./logs.ts";
import { behindAs } from "./node-behind.ts";
import { STAKER_TOPICS } from "./staker-log-decoder.ts";

/**
 * An eth_getLogs answer left out staker logs the block itself holds (a load balancer answering
 * from a node behind the block, a branch that flipped away and back between two reads). Nothing
 * of the range is written: it is fetched again, like any transient failure.
 */
export class StakerLogsMissing extends Error {
  override name = "StakerLogsMissing";
}

/** What a dense range's check did: its cost in blocks, and what the receipts corrected. */
export interface BloomCheck {
  /** Blocks whose bloom admits staker logs while the answer held none, asked again by hash. */
  askedAgain: number;
  /** Blocks whose receipts were read and matched their header's receiptsRoot. */
  receiptsChecked: number;
  /** Blocks whose staker logs were taken from their receipts: every answer lacked some. */
  fromReceipts: number;
}

/**
 * The staker logs of a dense range (every header read), each block's settled by what the node
 * cannot leave out. A block whose bloom turns the staker away holds none of its logs (a bloom
 * has no false negatives). A block whose bloom admits them is settled by its receipts, checked
 * against the header's receiptsRoot (block-receipts.ts): the answer's own logs stand when they
 * are the receipts' (a bloom false positive, or a block the answer gave in full), and the
 * receipts' stand in for them when not (an answer that left some or all of them out). A block
 * the answer holds none of is asked again by its hash first (reaskSuspects): more logs there
 * mean the range's answer alone was short, and the range is fetched again (StakerLogsMissing).
 *
 * Taking a block's logs from its receipts rather than refusing it: the receipts are committed to
 * by the header's receiptsRoot, in a header the range links to the stored chain, while an
 * eth_getLogs answer is committed to by nothing; they are the better evidence of the two, and a
 * node whose log index lost a block (a provider's log cache, a client's index bug) is then
 * followed correctly instead of stopping the follower.
 *
 * Mainnet blooms are full enough that a good share of blocks admit the staker by chance, so
 * most of this cost is false positives: one eth_getLogs and one eth_getBlockReceipts each.
 * When no receipts settle a block, `unsettled` names the lowest such block, and `logs` are
 * those of the blocks before it: the caller writes no further.
 */
export async function checkNoStakerLogMissing(
  node: NodeClients,
  staker: Address,
  headers: Iterable<Block>,
  logs: readonly StakerLog[],
): Promise<{ logs: StakerLog[]; check: BloomCheck; unsettled?: StakerLogsUnsettled }> {
  const answered = byBlock(logs);
  const suspects = [...headers]
    .filter((header) => mayHoldStakerLogs(header.logsBloom!, staker))
    .sort((a, b) => (a.number! < b.number! ? -1 : 1));
  const quiet = suspects.filter((header) => !answered.has(header.number!));
  await reaskSuspects(
    node.client,
    staker,
    quiet.map((header) => ({ blockNumber: header.number!, blockHash: header.hash!, answered: 0 })),
  );
  const { settled, checked, unsettled } = await settleByReceipts(
    node.receiptsClient,
    staker,
    suspects,
    answered,
  );
  const check = { askedAgain: quiet.length, receiptsChecked: checked, fromReceipts: settled.size };
  const settledLogs = replaceBlocks(logs, settled);
  if (!unsettled) return { logs: settledLogs, check };
  const before = settledLogs.filter((log) => log.blockNumber < unsettled.blockNumber);
  return { logs: before, check, unsettled };
}

/**
 * Each block's staker logs as its receipts have them (block-receipts.ts), where they are not
 * the answer's: blocks in order, up to the first one no receipts settle (`unsettled`); a failure
 * that may pass is thrown. `checked` counts the blocks whose receipts matched their root.
 */
export async function settleByReceipts(
  receiptsClient: PublicClient,
  staker: Address,
  headers: readonly Block[],
  answered: ReadonlyMap<bigint, StakerLog[]>,
): Promise<{
  settled: Map<bigint, StakerLog[]>;
  checked: number;
  unsettled?: StakerLogsUnsettled;
}> {
  const receipts = await Promise.allSettled(
    headers.map((header) =>
      verifiedStakerLogs(receiptsClient, staker, {
        number: header.number!,
        hash: header.hash!,
        receiptsRoot: header.receiptsRoot,
        transactions: header.transactions,
      }),
    ),
  );
  const settled = new Map<bigint, StakerLog[]>();
  for (const [i, header] of headers.entries()) {
    const outcome = receipts[i]!;
    if (outcome.status === "rejected") {
      if (!(outcome.reason instanceof StakerLogsUnsettled)) throw outcome.reason;
      return { settled, checked: i, unsettled: outcome.reason };
    }
    if (!sameLogs(answered.get(header.number!) ?? [], outcome.value)) {
      settled.set(header.number!, outcome.value);
    }
  }
  return { settled, checked: headers.length };
}

/** A range's logs by block, each block's in the answer's order. */
export function byBlock(logs: readonly StakerLog[]): Map<bigint, StakerLog[]> {
  const blocks = new Map<bigint, StakerLog[]>();
  for (const log of logs) {
    const list = blocks.get(log.blockNumber);
    if (list) list.push(log);
    else blocks.set(log.blockNumber, [log]);
  }
  return blocks;
}

/** The range's logs with the blocks of `settled` taken from it instead, in chain order. */
export function replaceBlocks(
  logs: readonly StakerLog[],
  settled: ReadonlyMap<bigint, StakerLog[]>,
): StakerLog[] {
  if (settled.size === 0) return [...logs];
  return [
    ...logs.filter((log) => !settled.has(log.blockNumber)),
    ...[...settled.values()].flat(),
  ].sort(
    (a, b) =>
      (a.blockNumber < b.blockNumber ? -1 : a.blockNumber > b.blockNumber ? 1 : 0) ||
      a.logIndex - b.logIndex,
  );
}

/** Whether two lists of one block's staker logs are the same logs, in the same places. */
export function sameLogs(a: readonly StakerLog[], b: readonly StakerLog[]): boolean {
  return a.length === b.length && a.every((log, i) => logKey(log) === logKey(b[i]!));
}

const logKey = (log: StakerLog) =>
  `${log.blockHash}:${log.logIndex}:${log.transactionHash}:${log.decoded.eventName}:${JSON.stringify(log.decoded.args, (_, value) => (typeof value === "bigint" ? value.toString() : value))}`;

/** A block that may hold more staker logs than the `answered` ones the range's answer gave. */
export interface SuspectBlock {
  blockNumber: bigint;
  blockHash: Hex;
  answered: number;
}

/**
 * Asks each suspect block again for its staker logs by its hash (EIP-234's `blockHash` filter,
 * which a node that lacks the block must refuse rather than answer empty). A block that then
 * shows more logs than the answer held throws StakerLogsMissing; one that shows no more was a
 * false alarm.
 *
 * The questions ride the client's JSON-RPC batches, unlike the range's eth_getLogs (which goes
 * alone, its answer may be huge): each asks for one block's staker logs, a few at most, and a
 * mainnet bloom full of other contracts' logs makes many of them on the follower's path.
 */
export async function reaskSuspects(
  client: PublicClient,
  staker: Address,
  suspects: readonly SuspectBlock[],
): Promise<void> {
  // A node without the block (a load balancer's backend behind the others) answers "unknown
  // block": it waits for the block, like every question about one it lacks.
  const found = await Promise.all(
    suspects.map((suspect) =>
      behindAs(suspect.blockNumber, () => blockStakerLogs(client, staker, suspect.blockHash)),
    ),
  );
  const missed = suspects.findIndex((suspect, i) => found[i]!.length > suspect.answered);
  if (missed >= 0) {
    const suspect = suspects[missed]!;
    throw new StakerLogsMissing(
      `eth_getLogs left out ${found[missed]!.length - suspect.answered} of the ${found[missed]!.length} staker logs of block ${suspect.blockNumber} (${suspect.blockHash}); the range is fetched again`,
    );
  }
}

/** A block's staker logs, asked by its hash. */
export async function blockStakerLogs(
  client: PublicClient,
  staker: Address,
  blockHash: Hex,
): Promise<StakerLog[]> {
  const raw = (await client.request({
    method: "eth_getLogs",
    params: [{ address: staker, blockHash, topics: [STAKER_TOPICS] }],
  })) as unknown as RpcLog[];
  return raw.filter((log) => !log.removed).map(decodeStakerLog);
}
