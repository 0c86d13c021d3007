/**
 * Which BullMQ worker errors say the worker lost its job (a warning: the job or its range runs
 * again) rather than a fault of Redis. The errors are BullMQ's own, as its scripts' codes make
 * them (finished-errors), so a wording BullMQ changes fails here.
 */
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "bullmq";
import { finishedErrors } from "bullmq/dist/esm/classes/finished-errors.js";
import { lostLockJob } from "../../indexer/queues/job-worker.ts";

const finished = (code: ErrorCode, command: string) =>
  finishedErrors({ code, jobId: "index-135-136", command, state: "active" });

describe("a job the worker lost", () => {
  test("its key gone (a failover to a replica that never saw it), its lock gone or another's", () => {
    expect(lostLockJob(finished(ErrorCode.JobNotExist, "moveToFinished"))).toBe("index-135-136");
    expect(lostLockJob(finished(ErrorCode.JobNotExist, "moveToDelayed"))).toBe("index-135-136");
    expect(lostLockJob(finished(ErrorCode.JobLockNotExist, "moveToFinished"))).toBe(
      "index-135-136",
    );
    expect(lostLockJob(finished(ErrorCode.JobLockMismatch, "moveToFinished"))).toBe(
      "index-135-136",
    );
    expect(lostLockJob(new Error("could not renew lock for job index-7-8"))).toBe("index-7-8");
  });

  test("anything else is not a lost job", () => {
    expect(lostLockJob(finished(ErrorCode.JobNotInState, "moveToFinished"))).toBeUndefined();
    expect(lostLockJob(new Error("connect ECONNREFUSED 127.0.0.1:6379"))).toBeUndefined();
    expect(lostLockJob("Missing key for job x. moveToFinished")).toBeUndefined();
  });
});
