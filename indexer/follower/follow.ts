import type { Logger } from "pino";
import type { PublicClient } from "viem";
import { type ChainTip, readChainTip } from "../chain/finality.ts";
import { StakerLogsMissing } from "../chain/missing-logs.ts";
import { NodeBehind } from "../chain/node-behind.ts";
import { type FetchedRange, type FetchStage, ReorgDetected } from "../fetch/fetch-range.ts";
import { pointsExplained } from "../project/stake-facts.ts";
import { enqueueRange, type Queues } from "../queues/queues.ts";
import { requeueLostRanges } from "../reconciler/reconcile.ts";
import { RangeStale, resolveLinkConflict, rollBackOrphans } from "../reorg/divergence.ts";
import {
  type Checkpoint,
  CheckpointMoved,
  type IndexerStore,
  LinkConflict,
} from "../store/index.ts";

export interface FollowSettings {
  chunkSize: number;
  confirmations: number;
  /** Blocks the follower indexes itself per tick; a longer way behind goes to chunk jobs. */
  inlineBlocks: number;
  /** FINALITY_DEPTH: blocks below the head taken as final; absent means the node's tag. */
  finalityDepth?: number;
}

/** Chunk jobs hold up the checkpoint with an error no retry fixes: an operator must act. */
export class ChunkJobsParked extends Error {
  override name = "ChunkJobsParked";
}

/** What a follow tick is handed: the fetch stage, the store, the queues and a node to ask. */
export interface FollowDeps {
  fetch: FetchStage;
  /** Asked for the chain's tip and, in a reorg, for the hashes that find the fork point. */
  client: PublicClient;
  store: IndexerStore;
  queues: Queues;
  log: Logger;
}

/**
 * One step of following the head, in the finality split: blocks at or below the finality
 * boundary are indexed by chunk jobs (any number of workers), blocks above it by this tick,
 * block by block with every hash kept and each block's parent checked against the stored one
 * inside the transaction that writes it. A reorg is rolled back here before anything new.
 *
 * A node that does not have a block the tick asks about (NodeBehind: a lone node behind the
 * checkpoint, a load balancer's backend behind the others) ends the tick as "waiting": nothing
 * is rolled back or written on its answer, and the next tick asks again.
 */
export async function followTick(deps: FollowDeps, settings: FollowSettings) {
  const { client, store } = deps;
  // Neither answer depends on the other: one round trip's wait instead of two.
  const [current, tip] = await Promise.all([
    store.checkpoint(),
    readChainTip(client, settings.finalityDepth),
  ]);
  if (!current) return { action: "no-checkpoint" as const };
  try {
    return await followFrom(deps, settings, current, tip);
  } catch (error) {
    if (!(error instanceof NodeBehind)) throw error;
    return { action: "waiting" as const, behind: error };
  }
}

async function followFrom(
  deps: FollowDeps,
  settings: FollowSettings,
  current: Checkpoint,
  tip: ChainTip,
) {
  const { store } = deps;
  if (current.finalizedBlock === null || tip.finalized > current.finalizedBlock) {
    await store.recordFinalized(tip.finalized);
  }

  const head = tip.head - BigInt(settings.confirmations);
  const inline = BigInt(settings.inlineBlocks);
  /**
   * The tick at the head: the blocks right above the checkpoint, written by this tick. Their
   * write claims the first block's parent hash for the checkpoint's block, inside the
   * transaction that holds the checkpoint, so a chain that left the checkpoint's block fails it
   * with LinkConflict, and resolveLinkConflict rolls back to the fork point (or stops with
   * ReorgTooDeep) just as the fork check would have. That check (rollBackOrphans: the stored
   * hash against the chain's) asks the same question a moment earlier, so this tick skips it;
   * every other tick writes nothing (a chain no longer than the checkpoint, chunk work) and keeps
   * it, since no write would ask.
   */
  const writesNextBlocks =
    current.scheduledBlock <= current.indexedBlock &&
    head > current.indexedBlock &&
    tip.finalized <= current.indexedBlock + inline;
  if (!writesNextBlocks) {
    const rolledBack = await rollBackOrphans(deps, tip.finalized);
    if (rolledBack) return { action: "rolled-back" as const, ...rolledBack };
  }
  if (current.scheduledBlock > current.indexedBlock) {
    const { parked } = await requeueLostRanges(deps, settings.chunkSize);
    if (parked.length > 0) {
      throw new ChunkJobsParked(
        `chunk job ${parked[0]!.id} failed for good and holds the checkpoint at ${current.indexedBlock}: ${parked[0]!.reason}`,
      );
    }
    if (tip.finalized > current.scheduledBlock + inline) {
      await schedule(deps, current.scheduledBlock, tip.finalized, settings.chunkSize);
    }
    return { action: "backfilling" as const };
  }
  if (head <= current.indexedBlock) return { action: "idle" as const };
  if (tip.finalized > current.indexedBlock + inline) {
    await schedule(deps, current.indexedBlock, tip.finalized, settings.chunkSize);
    return { action: "scheduled" as const };
  }
  const to = head < current.indexedBlock + inline ? head : current.indexedBlock + inline;
  try {
    const write = await fetchSettled(deps, { from: current.indexedBlock + 1n, to }, tip.head);
    const result = await store.writeRange(write, { extendsCheckpoint: true });
    // Written up to the block whose staker logs nothing settles; the follower holds there.
    if (write.held) throw write.held;
    // More blocks than one tick takes: the caller queues the next tick at once.
    const more = result.indexedBlock < head;
    return {
      action: "indexed" as const,
      events: write.events.length,
      logCheck: write.logCheck,
      more,
      ...result,
    };
  } catch (error) {
    // The chain moved during the tick, the node's answer left out logs, or another follower got
    // there first: the next tick starts from what is stored and what the chain now says.
    if (
      error instanceof ReorgDetected ||
      error instanceof StakerLogsMissing ||
      error instanceof CheckpointMoved
    ) {
      // A node that keeps leaving logs out holds the follower here: the operator must see why.
      if (error instanceof StakerLogsMissing)
        deps.log.warn({ err: error.message }, "an eth_getLogs answer left out staker logs");
      return { action: "retry" as const };
    }
    if (error instanceof LinkConflict) {
      await resolveLinkConflict(deps, error, tip.finalized).catch((stale: unknown) => {
        if (!(stale instanceof RangeStale)) throw stale;
      });
      return { action: "retry" as const };
    }
    throw error;
  }
}

/** How long a tick waits for the next block before it writes unexplained points at the head. */
const UNSETTLED_WAIT_MS = 1_000;

/**
 * The blocks right above the checkpoint, fetched with reads that describe them. A read at the
 * node's head can be answered from the block the node is mining next: anvil publishes that
 * block's state before its number (foundry-rs/foundry PR 16368), by hash as well, so a stake's
 * points would count a BYTES deposit of the next block. Reads made at the head are fetched again
 * once the head has moved past them (then they are settled): when it has moved by the time they
 * come back, or, when a stake's points do not follow from its figures, within UNSETTLED_WAIT_MS
 * (a block whose state was out before its number). A stake whose block did reconfigure the
 * staker waits that long, once, at the head.
 */
async function fetchSettled(
  deps: FollowDeps,
  blocks: { from: bigint; to: bigint },
  head: bigint,
): Promise<FetchedRange> {
  const request = { ...blocks, dense: true };
  const write = await deps.fetch(request);
  if (write.toBlock < head || write.stakes.length + write.citizens.length === 0) return write;
  const deadline =
    performance.now() + (write.stakes.every(pointsExplained) ? 0 : UNSETTLED_WAIT_MS);
  for (;;) {
    if ((await deps.client.getBlockNumber()) > write.toBlock) return deps.fetch(request);
    if (performance.now() >= deadline) return write;
    await Bun.sleep(50);
  }
}

async function schedule(
  deps: { store: IndexerStore; queues: Queues },
  after: bigint,
  to: bigint,
  chunkSize: number,
) {
  // Only the tick that wins the compare-and-set queues the range; others see it taken.
  if (await deps.store.markScheduled(after, to)) {
    await enqueueRange(deps.queues.chunks, after + 1n, to, chunkSize);
  }
}
