import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bunArgv } from "../support/commands.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

/**
 * Work scheduled in Postgres but lost from Redis (a restart without persistence, a flush) is
 * found and queued again by whatever indexer process is running, including a lone `backfill`.
 */
describe("no lost work", () => {
  let devnet: ScenarioChain;
  const harnesses: TestIndexer[] = [];

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 600, seed: "lost-work" });
    // Empty blocks make many one-block chunks, so the flush lands mid-backfill.
    await devnet.client.mine({ blocks: 300 });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  test("Redis flushed mid-backfill, with only the backfill command running, still completes", async () => {
    const harness = await startTestIndexer({
      label: "redis-flush",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { chunkSize: 1 },
    });
    harnesses.push(harness);
    const head = await devnet.client.getBlockNumber();
    const backfill = Bun.spawn(bunArgv(["scripts/cli.ts", "backfill", "--to", String(head)]), {
      env: harness.cliEnv({ CONCURRENCY: "1" }),
      stdout: "pipe",
      stderr: "pipe",
    });
    const start = devnet.deployment.deployBlock;
    const third = start + (head - start) / 3n;
    for (;;) {
      const checkpoint = await harness.indexer.store.checkpoint();
      if (checkpoint && checkpoint.indexedBlock >= third) break;
      if (backfill.exitCode !== null) throw new Error("the backfill ended before the flush");
      await Bun.sleep(20);
    }
    await harness.redis.clean();
    const flushedAt = (await harness.indexer.store.checkpoint())!.indexedBlock;
    expect(flushedAt).toBeLessThan(head);

    const exitCode = await Promise.race([
      backfill.exited,
      Bun.sleep(90_000).then(() => "timed out" as const),
    ]);
    if (exitCode === "timed out") backfill.kill("SIGKILL");
    const stderr = await new Response(backfill.stderr).text();
    expect({ exitCode, stderr: exitCode === 0 ? "" : stderr }).toEqual({ exitCode: 0, stderr: "" });
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBe(head);
    expect(await harness.mismatches()).toEqual([]);
  });
});
