/**
 * The chunk workers: BullMQ workers that take chunk jobs (a block range each) and index them
 * with `indexRange`. Takes its dependencies, so it can be built alone; any number of processes
 * run them against one queue.
 */
import { DelayedError, type Job, type Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { APPLICATION_NAME } from "../../db/client.ts";
import { errorSummary } from "../../lib/log.ts";
import { NodeBehind } from "../chain/node-behind.ts";
import { createJobWorker } from "../queues/job-worker.ts";
import { type ChunkJobData, MAX_STALLED_COUNT, QUEUE } from "../queues/queues.ts";
import { markUnrecoverable } from "../reconciler/reconcile.ts";
import { type HealthRecords, isFatal } from "../reports/health.ts";
import { type ChunkDeps, indexRange } from "./index-range.ts";

/** How long a chunk that met a node behind its blocks waits before it asks again. */
export const NODE_BEHIND_RETRY_MS = 2_000;

export interface ChunkWorkersDeps {
  deps: ChunkDeps;
  health: HealthRecords;
  redis: Redis;
  queuePrefix: string;
  concurrency: number;
  /** A killed worker's chunk returns to the queue about this long after it died. */
  jobLockMs?: number;
  log: Logger;
}

export function createChunkWorkers({
  deps,
  health,
  redis,
  queuePrefix,
  concurrency,
  jobLockMs,
  log,
}: ChunkWorkersDeps) {
  let worker: Worker<ChunkJobData> | undefined;

  async function processChunk(job: Job<ChunkJobData>, token?: string) {
    const from = BigInt(job.data.from);
    const to = BigInt(job.data.to);
    const started = performance.now();
    try {
      const result = await indexRange(deps, { from, to, replace: job.data.replace });
      await health.succeeded("chunks", started, result);
      const { corrected, disputed } = result.logCheck;
      if (corrected > 0 || disputed > 0) {
        log.warn(
          { job: job.id, disputed, corrected },
          "eth_getLogs answered otherwise than the check node or the blocks' receipts: written as they settled it",
        );
      }
      log.info(
        {
          job: job.id,
          from: job.data.from,
          to: job.data.to,
          events: result.events,
          slices: result.slices,
          collections: result.collections,
          indexedBlock: result.indexedBlock.toString(),
          ms: Math.round(performance.now() - started),
        },
        "chunk indexed",
      );
      return { events: result.events };
    } catch (error) {
      if (error instanceof NodeBehind && token) {
        // Waiting is not failing: the job goes back to the queue, delayed, its attempts kept.
        await health.waited("chunks", started, error);
        await job.moveToDelayed(Date.now() + NODE_BEHIND_RETRY_MS, token);
        throw new DelayedError();
      }
      // The mark is what parks the chunk; without it the reconciler would queue it again.
      if (isFatal(error)) await markUnrecoverable(job, errorSummary(error)).catch(() => {});
      return health.failed("chunks", error, started);
    }
  }

  return {
    /** Starts taking chunk jobs; returns the worker (for the caller's Redis outage reports). */
    start(): Worker<ChunkJobData> {
      worker = createJobWorker<ChunkJobData, { events: number }>(QUEUE.chunks, processChunk, {
        connection: redis,
        prefix: queuePrefix,
        // Each job names the process that took it (processedBy), as its Postgres connections do.
        name: APPLICATION_NAME,
        concurrency,
        lockDuration: jobLockMs ?? 30_000,
        stalledInterval: jobLockMs ?? 30_000,
        maxStalledCount: MAX_STALLED_COUNT,
      });
      const name = worker.name;
      worker.on("failed", (job, error) => {
        if (health.outage()) return;
        log.warn({ job: job?.id, queue: name, err: error.message }, "job failed");
      });
      return worker;
    },

    /** Whether `start` ran (the process took work). */
    started: () => worker !== undefined,

    /** Stops taking jobs and lets running ones finish. */
    async close() {
      await worker?.close();
    },
  };
}
