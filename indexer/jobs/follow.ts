import type { Logger } from "pino";
import { findForkPoint } from "../reorg/fork-point.ts";
import { indexRange, type RangeIndexerDeps } from "./index-range.ts";
import type { Queues } from "./queues.ts";
import { enqueueRange } from "./queues.ts";

export interface FollowSettings {
  chunkSize: number;
  confirmations: number;
  /** Up to this many new blocks are indexed inline by the tick; more go to chunk jobs. */
  inlineBlocks: number;
}

const PENDING_STATES = ["waiting", "active", "delayed", "prioritized", "waiting-children"] as const;

/**
 * One step of following the head: undo a reorg if the indexed tip left the chain, then index
 * what is new. A few blocks are indexed right here (sub-second pickup); a long way behind,
 * the range is handed to chunk jobs that any number of workers share.
 */
export async function followTick(
  deps: RangeIndexerDeps & { queues: Queues; log: Logger },
  settings: FollowSettings,
) {
  const { client, store, log } = deps;
  const current = await store.checkpoint();
  if (!current) return { action: "no-checkpoint" as const };

  const forkPoint = await findForkPoint(client, store, current.indexedBlock);
  if (forkPoint !== null) {
    const { removedEvents } = await store.rollbackTo(forkPoint);
    log.warn(
      {
        indexedBlock: current.indexedBlock.toString(),
        forkPoint: forkPoint.toString(),
        removedEvents,
      },
      "reorg: rolled back to the fork point",
    );
    return { action: "rolled-back" as const, forkPoint };
  }

  const head = (await client.getBlockNumber()) - BigInt(settings.confirmations);
  if (current.scheduledBlock > current.indexedBlock) {
    await requeueLostRanges(deps, settings.chunkSize);
    if (head > current.scheduledBlock + BigInt(settings.inlineBlocks)) {
      await schedule(deps, current.scheduledBlock, head, settings.chunkSize);
    }
    return { action: "backfilling" as const };
  }
  if (head <= current.indexedBlock) return { action: "idle" as const };
  if (head - current.indexedBlock > BigInt(settings.inlineBlocks)) {
    await schedule(deps, current.indexedBlock, head, settings.chunkSize);
    return { action: "scheduled" as const };
  }
  const result = await indexRange(deps, {
    from: current.indexedBlock + 1n,
    to: head,
    verifyHashes: true,
  });
  return { action: "indexed" as const, ...result };
}

async function schedule(
  deps: { store: RangeIndexerDeps["store"]; queues: Queues },
  after: bigint,
  to: bigint,
  chunkSize: number,
) {
  // Only the tick that wins the compare-and-set queues the range; others see it taken.
  if (await deps.store.markScheduled(after, to)) {
    await enqueueRange(deps.queues.chunks, after + 1n, to, chunkSize);
  }
}

/**
 * Chunk jobs can be lost with a Redis that keeps nothing on disk, or fail for good; when no
 * job is pending, every scheduled range no finished chunk covers is queued again.
 */
async function requeueLostRanges(
  deps: { store: RangeIndexerDeps["store"]; queues: Queues; log: Logger },
  chunkSize: number,
) {
  const pending = await deps.queues.chunks.getJobCountByTypes(...PENDING_STATES);
  if (pending > 0) return;
  const gaps = await deps.store.missingRanges();
  for (const gap of gaps) {
    deps.log.warn({ from: gap.from.toString(), to: gap.to.toString() }, "re-queueing a lost range");
    await enqueueRange(deps.queues.chunks, gap.from, gap.to, chunkSize);
  }
}
