import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";

describe("backfill through chunk jobs", () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer;

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 2_000, seed: "backfill" });
    harness = await startTestIndexer({
      label: "backfill",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
    });
  });

  afterAll(async () => {
    await harness?.cleanup();
    await devnet?.stop();
  });

  test("every wallet's staked citizens equal the staker's views at the indexed block", async () => {
    const { indexer } = harness;
    const { to, chunks } = await indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
    });
    expect(chunks).toBeGreaterThan(1);
    await indexer.start({ follow: false });
    await harness.waitForBlock(to);
    expect(await indexer.store.countEvents(devnet.deployment.deployBlock, to)).toBe(
      devnet.scenario.stakerEvents,
    );
    expect(await harness.mismatches()).toEqual([]);
  });
});
