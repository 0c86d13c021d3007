import { Queue } from "bullmq";
import IORedis, { type Redis } from "ioredis";
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

export const chunkJobOptions = {
  attempts: 12,
  backoff: { type: "exponential", delay: 500 },
  removeOnComplete: true,
  // Failed chunks stay visible (status, bull-board) until the follower re-queues them.
  removeOnFail: false,
} as const;

/** A Redis connection as BullMQ wants it for workers: commands wait for a reconnect instead of failing. */
export function redisConnection(url: string): Redis {
  return new IORedis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
}

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
