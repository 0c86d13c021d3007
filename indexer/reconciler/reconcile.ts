import type { Job } from "bullmq";
import type { Logger } from "pino";
import { type ChunkJobData, enqueueRange, PENDING_STATES, type Queues } from "../queues/queues.ts";
import type { IndexerStore } from "../store/index.ts";
import { type BlockRange, subtractRanges } from "../store/ranges.ts";

/**
 * A chunk job whose last failure no retry fixes: it waits for an operator. Only the worker's own
 * mark says so (markUnrecoverable). A job failed any other way (its worker died more often than
 * maxStalledCount allows, its retries ran out during an outage) is queued again: BullMQ fails a
 * stalled-out job with an UnrecoverableError of its own, attempts left or not, so neither the
 * error's kind nor attemptsMade tells the two apart.
 */
export function isParked(job: Job<ChunkJobData>): boolean {
  return job.data.unrecoverable !== undefined && job.data.unrecoverable === job.failedReason;
}

/**
 * Records, before the job fails with `reason`, that no retry fixes it. Kept beside the reason:
 * a later failure of another kind (after an operator's retry) no longer reads as parked.
 */
export async function markUnrecoverable(job: Job<ChunkJobData>, reason: string) {
  await job.updateData({ ...job.data, unrecoverable: reason });
}

/**
 * A failed chunk job whose blocks are written all the same: its worker committed the range and
 * died before finishing the job, more often than maxStalledCount allows, so BullMQ failed it
 * ("stalled more than allowable limit"). `gaps` are the store's missingRanges. A reindex chunk
 * is never done this way: its blocks were written before it ran.
 */
export function isWrittenChunk(job: Job<ChunkJobData>, gaps: readonly BlockRange[]): boolean {
  return !job.data.replace && !isParked(job) && !overlaps(chunkRange(job), gaps);
}

const chunkRange = (job: Job<ChunkJobData>): BlockRange => ({
  from: BigInt(job.data.from),
  to: BigInt(job.data.to),
});

export interface Reconciled {
  /** Ranges queued again. */
  requeued: BlockRange[];
  /** Failed-for-good jobs that hold up the checkpoint, with their reasons. */
  parked: Array<{ id: string; range: BlockRange; reason: string }>;
}

/**
 * Scheduled blocks that are neither written nor queued are lost work: a Redis that lost its
 * state, jobs that used up their retries (a long node outage), or jobs whose workers died more
 * often than MAX_STALLED_COUNT allows. Once no chunk job is pending,
 * they are queued again. Ranges of parked jobs are left alone: retrying them would only loop.
 * Every process that runs workers calls this, so a backfill never waits on work that is gone.
 */
export async function requeueLostRanges(
  deps: { store: IndexerStore; queues: Queues; log: Logger },
  chunkSize: number,
): Promise<Reconciled> {
  const none: Reconciled = { requeued: [], parked: [] };
  if ((await deps.queues.chunks.getJobCountByTypes(...PENDING_STATES)) > 0) return none;
  const allFailed = (await deps.queues.chunks.getFailed()).filter(
    (job): job is Job<ChunkJobData> => job !== undefined,
  );
  // A reindex's chunks are retried in place: their ids are what its progress waits on.
  for (const job of allFailed) {
    if (job.data.replace && !isParked(job)) await job.retry("failed", { resetAttemptsMade: true });
  }
  const gaps = await deps.store.missingRanges();
  const failed = allFailed.filter((job) => !job.data.replace);
  // Those not parked go: their ranges are written (done, whatever the queue says) or among the
  // gaps queued again below. A written one would otherwise stay failed for ever.
  for (const job of failed) if (!isParked(job)) await job.remove();
  if (gaps.length === 0) return none;
  const parked = failed.filter(isParked).map((job) => ({
    id: job.id ?? "",
    range: chunkRange(job),
    reason: job.failedReason,
  }));
  const lost = subtractRanges(
    gaps,
    parked.map((job) => job.range),
  );
  for (const range of lost) {
    deps.log.warn(
      { from: range.from.toString(), to: range.to.toString() },
      "re-queueing a range that is neither indexed nor queued",
    );
    await enqueueRange(deps.queues.chunks, range.from, range.to, chunkSize);
  }
  return { requeued: lost, parked: parked.filter((job) => overlaps(job.range, gaps)) };
}

const overlaps = (range: BlockRange, others: readonly BlockRange[]) =>
  others.some((other) => other.from <= range.to && range.from <= other.to);
