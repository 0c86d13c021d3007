import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SeededRandom } from "../../devnet/random.ts";
import { chunkJobId, chunkJobOptions, enqueueRange } from "../../indexer/queues/queues.ts";
import { splitRange } from "../../indexer/store/ranges.ts";
import { bunArgv } from "../support/commands.ts";
import { indexDevnet, startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { tableSnapshot } from "../support/snapshot.ts";

/**
 * One scenario, indexed several ways; every way must end in the same tables as a plain run,
 * and those tables must match the staker's own views.
 */
describe("the same tables whatever happens on the way", () => {
  let devnet: ScenarioChain;
  let reference: TestIndexer;
  let referenceTables: Record<string, string[]>;
  let head: bigint;
  const harnesses: TestIndexer[] = [];

  const fresh = async (label: string, chunkSize: number) => {
    const harness = await startTestIndexer({
      label,
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { chunkSize, jobLockMs: 1_000 },
    });
    harnesses.push(harness);
    return harness;
  };

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 3_000, seed: "crash-safety" });
    head = await devnet.client.getBlockNumber();
    reference = await indexDevnet(devnet, {
      label: "reference",
      options: { chunkSize: 2_000, jobLockMs: 1_000 },
      to: head,
    });
    harnesses.push(reference);
    referenceTables = await tableSnapshot(reference.database.url);
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  test("a plain backfill stores every staker event and matches the staker's views for every wallet", async () => {
    expect(referenceTables.staked_citizens?.length).toBeGreaterThan(100);
    expect(await reference.indexer.store.countEvents(devnet.deployment.deployBlock, head)).toBe(
      devnet.progress.stakerEvents,
    );
    expect(await reference.mismatches()).toEqual([]);
  });

  test("one-block chunks queued in shuffled order, shared by two worker processes, give the same tables", async () => {
    const harness = await fresh("shuffled", 1);
    const { from } = await harness.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
      to: devnet.deployment.deployBlock - 1n,
    });
    const ranges = splitRange(from, head, 1);
    const random = new SeededRandom("shuffle");
    for (let i = ranges.length - 1; i > 0; i--) {
      const j = random.int(0, i);
      [ranges[i], ranges[j]] = [ranges[j]!, ranges[i]!];
    }
    for (const range of ranges) {
      await harness.indexer.queues.chunks.add(
        "index",
        { from: range.from.toString(), to: range.to.toString() },
        { ...chunkJobOptions, jobId: chunkJobId(range.from, range.to) },
      );
    }
    await harness.indexer.store.raiseScheduled(head);
    const second = await harness.open();
    await harness.indexer.start({ follow: false });
    await second.start({ follow: false });
    await harness.waitForBlock(head);
    expect(await tableSnapshot(harness.database.url)).toEqual(referenceTables);
  });

  test("a worker killed with SIGKILL mid-backfill and started again ends in the same tables", async () => {
    const harness = await fresh("killed", 1);
    const { from } = await harness.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
      to: head,
    });
    const env = {
      ...process.env,
      RPC_URL: devnet.node.rpcUrl,
      STAKER_ADDRESS: devnet.deployment.addresses.staker,
      DATABASE_URL: harness.database.url,
      REDIS_URL: harness.redis.url,
      QUEUE_PREFIX: harness.redis.prefix,
      CONCURRENCY: "2",
      JOB_LOCK_MS: "1000",
      LOG_LEVEL: "warn",
    };
    const spawnWorker = () =>
      Bun.spawn(bunArgv(["scripts/cli.ts", "worker"]), {
        env,
        stdout: "inherit",
        stderr: "inherit",
      });

    const first = spawnWorker();
    const third = from + (head - from) / 3n;
    await harness.waitForBlock(third);
    first.kill("SIGKILL");
    await first.exited;
    const interrupted = (await harness.indexer.store.checkpoint())?.indexedBlock ?? 0n;
    expect(interrupted).toBeLessThan(head);

    const second = spawnWorker();
    try {
      await harness.waitForBlock(head);
    } finally {
      second.kill("SIGTERM");
      await second.exited;
    }
    expect(await tableSnapshot(harness.database.url)).toEqual(referenceTables);
  });

  test("reindexing a middle range rebuilds the same tables", async () => {
    const middle = devnet.deployment.deployBlock + (head - devnet.deployment.deployBlock) / 3n;
    const end = middle + (head - middle) / 2n;
    const versionBefore = (await reference.indexer.store.checkpoint())!.updatedAt;
    await enqueueRange(reference.indexer.queues.chunks, middle, end, 3, true);
    const deadline = Date.now() + 60_000;
    while (
      (await reference.indexer.queues.chunks.getJobCountByTypes("waiting", "active", "delayed")) > 0
    ) {
      if (Date.now() > deadline) throw new Error("reindex jobs never finished");
      await Bun.sleep(50);
    }
    expect(await reference.indexer.queues.chunks.getJobCountByTypes("failed")).toBe(0);
    expect(await tableSnapshot(reference.database.url)).toEqual(referenceTables);
    expect(await reference.mismatches()).toEqual([]);
    // The same rows, yet the checkpoint's write time (the data version the API's ETags and
    // cached bodies are keyed by) moved: a rewrite below the indexed block says it happened.
    expect((await reference.indexer.store.checkpoint())!.updatedAt).not.toEqual(versionBefore);
  });
});
