import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { splitRange } from "../store/ranges.ts";

/** Names of the queues every worker process shares through Redis. */
export const QUEUE = {
  /** Block ranges to fetch and write: backfill, reindex and catch-up after a pause. */
  chunks: "chunks",
  /** Ticks of the head follower, produced by a job scheduler. */
  follow: "follow",
} as const;

export const FOLLOW_SCHEDULER_ID = "follow-head";

/** Block numbers travel as decimal strings: JSON has no bigint. */
export interface ChunkJobData {
  from: string;
  to: string;
  /** Operator reindex: replace what the range holds. */
  replace?: boolean;
  /**
   * The failure no retry fixes (UnrecoverableError from a fatal class), recorded by the worker
   * as it fails the job: only a job whose last failure is this one is parked (see isParked).
   */
  unrecoverable?: string;
}

/** BullMQ forbids ":" in custom ids; these name the range so a duplicate add is a no-op. */
export function chunkJobId(from: bigint, to: bigint, replace = false, requestedAt?: number) {
  return replace ? `reindex-${from}-${to}-${requestedAt ?? Date.now()}` : `index-${from}-${to}`;
}

/** States in which a chunk job will still run. */
export const PENDING_STATES = [
  "waiting",
  "active",
  "delayed",
  "prioritized",
  "waiting-children",
] as const;

/**
 * Retries of a chunk whose indexing threw. A transient failure (the node or Postgres away) is
 * retried with backoff, 12 times over about half an hour; a chunk that used them up is queued
 * again by the reconciler (requeueLostRanges), so an outage of any length ends in the chunk
 * written. Only an error no retry can fix fails a chunk for good (UnrecoverableError).
 */
export const chunkJobOptions = {
  attempts: 12,
  backoff: { type: "exponential", delay: 500 },
  removeOnComplete: true,
  // Failed chunks stay visible (status, bull-board) until the follower re-queues them.
  removeOnFail: false,
} as const;

/**
 * Times a chunk whose worker died (kill -9, OOM, a drained node) goes straight back to the queue.
 * A death is never the chunk's fault, and running a chunk twice is safe (its writes are keyed by
 * chain identity), so a stall never parks a chunk. But a chunk that kills every worker that
 * takes it (one too big for memory) must not hold all of them in a crash loop: after this many
 * deaths in a row BullMQ fails it ("job stalled more than allowable limit"), the rest of the
 * queue goes first, and the reconciler queues it again once nothing else is pending.
 */
export const MAX_STALLED_COUNT = 2;

export function createQueues(connection: Redis, prefix: string) {
  const chunks = new Queue<ChunkJobData>(QUEUE.chunks, { connection, prefix });
  const follow = new Queue(QUEUE.follow, { connection, prefix });
  return { chunks, follow, close: () => Promise.all([chunks.close(), follow.close()]) };
}

export type Queues = ReturnType<typeof createQueues>;

/** Queues chunk jobs for [from, to]; ranges already queued or failed are re-armed, not doubled. */
export async function enqueueRange(
  queue: Queue<ChunkJobData>,
  from: bigint,
  to: bigint,
  size: number,
  replace = false,
  /** Names a reindex's jobs, so its progress can find them (chunkJobId). */
  requestedAt = Date.now(),
) {
  const ranges = splitRange(from, to, size);
  for (const range of ranges) {
    const jobId = chunkJobId(range.from, range.to, replace, requestedAt);
    const existing = replace ? undefined : await queue.getJob(jobId);
    if (existing && (await existing.isFailed())) {
      await existing.retry();
      continue;
    }
    await queue.add(
      replace ? "reindex" : "index",
      { from: range.from.toString(), to: range.to.toString(), ...(replace && { replace }) },
      { ...chunkJobOptions, jobId },
    );
  }
  return ranges.length;
}

/**
 * For commands that only look (status): the queues write nothing to Redis. BullMQ otherwise
 * writes each queue's meta key when it connects, creating keys under any prefix it is given.
 */
export function readOnlyQueues(connection: Redis, prefix: string): Queues {
  const settings = { connection, prefix, skipMetasUpdate: true };
  const chunks = new Queue<ChunkJobData>(QUEUE.chunks, settings);
  const follow = new Queue(QUEUE.follow, settings);
  return { chunks, follow, close: () => Promise.all([chunks.close(), follow.close()]) };
}
