/**
 * Every BullMQ worker of the indexer is made here, so what a failed job keeps is redacted in one
 * place. BullMQ stores a thrown error's message as the job's failedReason and its stack in the
 * job's stacktrace, in Redis, where bull-board, `status` and anyone holding REDIS_URL read them;
 * viem's messages quote the node's URL, whose path or query may hold a provider key.
 */
import { ErrorCode, type Processor, Worker, type WorkerOptions } from "bullmq";
import type { Logger } from "pino";
import { redactSecrets } from "../../lib/error-cause.ts";
import type { Refusals } from "../../lib/outages.ts";

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
 * The job a worker no longer holds, when `error` says it lost one (undefined otherwise): its lock
 * lapsed (the process was paused, or the job outlived JOB_LOCK_MS unrenewed), or Redis failed
 * over to a replica that never saw the job taken, or never saw the job at all. BullMQ says so
 * two ways: a renewal that failed ("could not renew lock for job <id>", an Error with no code,
 * so its words are all there is to match) and a finish it refuses (JobLockNotExist,
 * JobLockMismatch, and JobNotExist, "Missing key for job <id>", when the new primary lacks the
 * job: seen after a Sentinel failover under load). The job runs again (stalled, or still waiting
 * on the new primary), or, gone, the reconciler queues its range anew once nothing is pending
 * (docs/decisions/no-lost-work.md); its writes are idempotent: a warning, not a fault.
 */
export function lostLockJob(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  const lost =
    code === ErrorCode.JobNotExist ||
    code === ErrorCode.JobLockNotExist ||
    code === ErrorCode.JobLockMismatch ||
    (code === undefined && error.message.startsWith("could not renew lock for job "));
  if (!lost) return undefined;
  return /for job (\S+?)\.?(?:\s|$)/.exec(error.message)?.[1] ?? "(unnamed)";
}

/** A job lost again after this long is said again: it was taken and lost anew. */
const LOST_JOB_QUIET_MS = 60_000;

/**
 * For a worker's 'error' events: says once per job that the worker lost it (a paused process
 * meets a failed renewal every half lock, then a refused finish), and returns whether `error`
 * was such a loss (anything else is the caller's to report).
 */
export function createLostLockReporter(log: Logger): (error: unknown) => boolean {
  const said = new Map<string, number>();
  return (error) => {
    const job = lostLockJob(error);
    if (job === undefined) return false;
    const now = Date.now();
    if (now - (said.get(job) ?? 0) < LOST_JOB_QUIET_MS) return true;
    for (const [id, at] of said) if (now - at >= LOST_JOB_QUIET_MS) said.delete(id);
    said.set(job, now);
    log.warn(
      { job, err: (error as Error).message },
      "a worker lost its lock on a job (paused, or cut off from Redis, past JOB_LOCK_MS, or Redis failed over); the job or its range runs again",
    );
    return true;
  };
}

/**
 * Workers held still while Redis refuses writes (`refusals`: full, under `noeviction`). BullMQ's
 * worker asks for its next job again at once after a refused one (its retry delay is for lost
 * connections only), so a follower whose scheduled ticks wait in a full Redis spun a core at
 * 100%, with Redis busy refusing it (a 12 s test: 57% of the follower's whole run). A worker that
 * meets a refusal pauses; `release`, told when Redis takes writes again, resumes them all.
 */
export function holdWorkersWhile(refusals: Pick<Refusals, "is">, log: Logger) {
  const held = new Set<Worker>();
  const report = (error: unknown) =>
    log.warn({ err: String(error) }, "could not pause or resume a worker");
  return {
    /** Pauses `worker` when `error` is a refusal, and hands the error on to be reported. */
    holdOn(worker: unknown, error: unknown): unknown {
      if (refusals.is(error) && worker instanceof Worker && !held.has(worker)) {
        held.add(worker);
        worker.pause(true).catch(report);
      }
      return error;
    },
    release() {
      for (const worker of held) if (!worker.closing) worker.resume().catch(report);
      held.clear();
    },
  };
}

/** The same error, its class kept (an UnrecoverableError must stay one), its words redacted. */
function redacted(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(redactSecrets(String(error)));
  error.message = redactSecrets(error.message);
  if (error.stack) error.stack = redactSecrets(error.stack);
  return error;
}
