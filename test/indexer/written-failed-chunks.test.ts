/**
 * A chunk job that failed after its range was written (its workers died between the commit and
 * the job's end, past the stall limit, and BullMQ failed it "stalled more than allowable limit")
 * is done, whatever the queue says: `status` shows it so, and the reconciler clears it. Before,
 * with no range left to re-queue, it stayed "failed (will be re-queued)" forever.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { UnrecoverableError, Worker } from "bullmq";
import { indexRange } from "../../indexer/chunk-workers/index-range.ts";
import { QUEUE } from "../../indexer/queues/queues.ts";
import { openRedis } from "../../lib/redis.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";

/** What BullMQ fails a job with once its workers died more often than maxStalledCount. */
const STALLED_OUT = "job stalled more than allowable limit";

let devnet: ScenarioDevnet;
let harness: TestIndexer;

beforeAll(async () => {
  devnet = await startScenarioDevnet({ events: 20, seed: "written-failed" });
  harness = await startTestIndexer({
    label: "written-failed",
    rpcUrl: devnet.node.rpcUrl,
    staker: devnet.deployment.addresses.staker,
    options: { chunkSize: 100_000 },
  });
});

afterAll(async () => {
  await harness?.cleanup();
  await devnet?.stop();
});

test("a chunk that stalled out after its range was written shows done in status, and is cleared", async () => {
  const head = await devnet.client.getBlockNumber();
  const from = devnet.deployment.deployBlock;
  await harness.indexer.enqueueBackfill({ startBlock: from, to: head });
  // The chunk's last worker: takes the job, writes its range, and dies before finishing it;
  // BullMQ then fails the job as stalled out.
  const connection = openRedis({ url: harness.options.redis.url }, "queues");
  const taker = new Worker(QUEUE.chunks, null, {
    connection,
    prefix: harness.options.queuePrefix,
  });
  try {
    const token = "dead-worker";
    const job = await taker.getNextJob(token);
    expect(job?.data).toMatchObject({ from: from.toString(), to: head.toString() });
    await indexRange(harness.indexer.deps, { from, to: head });
    await job!.moveToFailed(new UnrecoverableError(STALLED_OUT), token);
    expect(await harness.indexer.queues.chunks.getJobState(job!.id!)).toBe("failed");
    expect((await harness.indexer.store.checkpoint())?.indexedBlock).toBe(head);

    const status = await harness.cli(["status"]);
    expect(status.stdout).not.toContain("will be re-queued");
    expect(status.stdout).toContain(`${job!.id} done (its blocks are written;`);

    await harness.indexer.reconcile();
    expect(await harness.indexer.queues.chunks.getJobState(job!.id!)).toBe("unknown");
    expect((await harness.cli(["status"])).stdout).not.toContain(job!.id!);
  } finally {
    await taker.close();
    connection.disconnect();
  }
}, 120_000);
