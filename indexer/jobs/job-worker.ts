/**
 * Every BullMQ worker of the indexer is made here, so what a failed job keeps is redacted in one
 * place. BullMQ stores a thrown error's message as the job's failedReason and its stack in the
 * job's stacktrace, in Redis, where bull-board, `status` and anyone holding REDIS_URL read them;
 * viem's messages quote the node's URL, whose path or query may hold a provider key.
 */
import { type Processor, Worker, type WorkerOptions } from "bullmq";
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

/** The same error, its class kept (an UnrecoverableError must stay one), its words redacted. */
function redacted(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(redactSecrets(String(error)));
  error.message = redactSecrets(error.message);
  if (error.stack) error.stack = redactSecrets(error.stack);
  return error;
}
