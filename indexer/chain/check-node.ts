import type { Address, Block, Hex, PublicClient } from "viem";
import { type NodeClients, StakerLogsUnsettled, verifiedStakerLogs } from "./block-receipts.ts";
import { fetchStakerLogs, type LogRangeGovernor, type StakerLog } from "./logs.ts";
import { blockStakerLogs, byBlock, replaceBlocks, sameLogs } from "./missing-logs.ts";

/** A second node (RPC_CHECK_URL) that answers a chunk's spans beside the indexer's own. */
export interface CheckNode extends NodeClients {
  /** eth_getLogs alone, as the indexer's own logClient. */
  logClient: PublicClient;
  /** Its own: the check node's provider may cap eth_getLogs otherwise. */
  governor: LogRangeGovernor;
}

/**
 * The check node does not have the chunk's last block as the indexer's node has it (it is
 * behind, or on another branch): the chunk is fetched again later, like any transient failure.
 */
export class CheckNodeOutOfStep extends Error {
  override name = "CheckNodeOutOfStep";
}

/**
 * The two nodes disagree on a block's staker logs, asked again by its hash, and neither node's
 * receipts settle it: the chunk is parked for an operator rather than written on one node's word.
 */
export class StakerLogsDisputed extends Error {
  override name = "StakerLogsDisputed";
}

/** What comparing a chunk with the check node did, in blocks. */
export interface NodeComparison {
  /** Blocks whose staker logs the two range answers gave differently. */
  disputed: number;
  /** Of those, blocks settled by receipts matching the header's receiptsRoot. */
  settledByReceipts: number;
  /** Of those, blocks whose staker logs, as settled, are not the indexer's node's answer. */
  corrected: number;
}

/**
 * The check node's staker logs of [from, to], through its own governor, and its hash of block
 * `to`: a node behind the chunk, or on another branch, is told apart from one that disagrees.
 */
export async function fetchCheckNodeLogs(
  check: CheckNode,
  staker: Address,
  from: bigint,
  to: bigint,
): Promise<{ logs: StakerLog[]; lastHash: Hex }> {
  const [logs, last] = await Promise.all([
    fetchStakerLogs(check.logClient, staker, from, to, check.governor, "RPC_CHECK_URL"),
    check.client.getBlock({ blockNumber: to }).catch((error: unknown) => {
      throw new CheckNodeOutOfStep(
        `the check node (RPC_CHECK_URL) cannot give block ${to} (${error instanceof Error ? error.name : error}); the chunk is fetched again`,
      );
    }),
  ]);
  return { logs, lastHash: last.hash! };
}

/**
 * The chunk's staker logs, once the check node's answer for the same spans agrees with the
 * indexer's node's. Each block the two answers give differently is read again from both by its
 * hash (the hash of the indexer's node's header at that number): if they now agree, that is
 * its answer (one range answer was short for a moment). If not, its receipts are read, from the
 * indexer's node and then from the check node, and checked against the header's receiptsRoot
 * (block-receipts.ts): receipts that match settle it, whichever node was wrong. If nothing
 * settles it, StakerLogsDisputed: the chunk is parked, not written on one node's word.
 *
 * The cost is the check node's: one eth_getLogs a span (its own governor) and one header a
 * chunk. The indexer's node pays only for a disputed block: a header, a re-ask and receipts.
 */
export async function agreeWithCheckNode(
  node: NodeClients,
  check: CheckNode,
  staker: Address,
  answers: { own: readonly StakerLog[]; check: readonly StakerLog[] },
): Promise<{ logs: StakerLog[]; comparison: NodeComparison }> {
  const own = byBlock(answers.own);
  const other = byBlock(answers.check);
  const disputed = [...new Set([...own.keys(), ...other.keys()])]
    .filter((block) => !sameLogs(own.get(block) ?? [], other.get(block) ?? []))
    .sort((a, b) => (a < b ? -1 : 1));
  if (disputed.length === 0) {
    return {
      logs: [...answers.own],
      comparison: { disputed: 0, settledByReceipts: 0, corrected: 0 },
    };
  }

  const headers = await Promise.all(
    disputed.map((blockNumber) => node.client.getBlock({ blockNumber })),
  );
  const settled = new Map<bigint, StakerLog[]>();
  let settledByReceipts = 0;
  let corrected = 0;
  const outcomes = await Promise.all(headers.map((header) => settle(node, check, staker, header)));
  for (const [i, outcome] of outcomes.entries()) {
    const blockNumber = disputed[i]!;
    if (outcome.logs === undefined) {
      throw new StakerLogsDisputed(
        `block ${blockNumber}: the node at RPC_URL gives ${own.get(blockNumber)?.length ?? 0} staker logs, the check node (RPC_CHECK_URL) ${other.get(blockNumber)?.length ?? 0}, asked again by hash they still differ, and no receipts settle it (${outcome.reason}); the chunk is parked until an operator retries it`,
      );
    }
    if (outcome.byReceipts) settledByReceipts++;
    if (!sameLogs(own.get(blockNumber) ?? [], outcome.logs)) corrected++;
    settled.set(blockNumber, outcome.logs);
  }
  return {
    logs: replaceBlocks(answers.own, settled),
    comparison: { disputed: disputed.length, settledByReceipts, corrected },
  };
}

type Settlement = { logs: StakerLog[]; byReceipts: boolean } | { logs: undefined; reason: string };

/** One disputed block: asked again by hash of both nodes, then settled by either's receipts. */
async function settle(
  node: NodeClients,
  check: CheckNode,
  staker: Address,
  header: Block,
): Promise<Settlement> {
  const [own, other] = await Promise.allSettled([
    blockStakerLogs(node.client, staker, header.hash!),
    blockStakerLogs(check.client, staker, header.hash!),
  ]);
  if (
    own.status === "fulfilled" &&
    other.status === "fulfilled" &&
    sameLogs(own.value, other.value)
  ) {
    return { logs: own.value, byReceipts: false };
  }
  const receiptsHeader = {
    number: header.number!,
    hash: header.hash!,
    receiptsRoot: header.receiptsRoot,
    transactions: header.transactions,
  };
  const reasons: string[] = [];
  for (const [receipts, source] of [
    [node.receiptsClient, "RPC_URL"],
    [check.receiptsClient, "RPC_CHECK_URL"],
  ] as const) {
    try {
      return {
        logs: await verifiedStakerLogs(receipts, staker, receiptsHeader),
        byReceipts: true,
      };
    } catch (error) {
      if (!(error instanceof StakerLogsUnsettled)) throw error;
      reasons.push(`${source}: ${error.reason}`);
    }
  }
  return { logs: undefined, reason: reasons.join("; ") };
}
