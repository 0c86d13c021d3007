/**
 * Every BullMQ worker of the indexer is made here, so what a failed job keeps is redacted in one
 * place. BullMQ stores a thrown error's message as the job's failedReason and its stack in the
 * job's stacktrace, in Redis, where bull-board, `status` and anyone holding REDIS_URL read them;
 * viem's messages quote the node's URL, whose path or query may hold a provider key.
 */
import { ErrorCode, type Processor, Worker, type WorkerOptions } from "bullmq";
import { redactSecrets } from "../../lib/error-cause.ts";

export function createJobWorker<Data, Result>(
  queue: string,
  processor: Processor<Data, Result>,
  options: WorkerOptions,
): Worker<Data, Result> {
  return new Worker<Data, Result>(
    queue,
    async (job, token, signal) => {
      try {
        return await processor(job, token, signal);
      } catch (error) {
        throw redacted(error);
      }
    },
    options,
  );
}

/**
 * The worker no longer holds the job it ran, so BullMQ refuses to finish it there: its lock
 * lapsed (the job outlived JOB_LOCK_MS unrenewed), or Redis failed over to a replica that never
 * saw the job taken. The job runs again (stalled, or still waiting on the new primary), and its
 * writes are idempotent: a warning, not a fault.
 */
export function isLostLock(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === ErrorCode.JobLockNotExist || code === ErrorCode.JobLockMismatch;
}

/** The same error, its class kept (an UnrecoverableError must stay one), its words redacted. */
function redacted(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(redactSecrets(String(error)));
  error.message = redactSecrets(error.message);
  if (error.stack) error.stack = redactSecrets(error.stack);
  return error;
}
