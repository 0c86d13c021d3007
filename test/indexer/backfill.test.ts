import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

describe("backfill through chunk jobs", () => {
  let devnet: ScenarioChain;
  let harness: IndexedDevnet;

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 2_000, seed: "backfill" });
  });

  afterAll(async () => {
    await harness?.cleanup();
    await devnet?.stop();
  });

  test("every wallet's staked citizens equal the staker's views at the indexed block", async () => {
    harness = await indexDevnet(devnet, { label: "backfill" });
    const { to, chunks } = harness.backfill;
    expect(chunks).toBeGreaterThan(1);
    expect(await harness.indexer.store.countEvents(devnet.deployment.deployBlock, to)).toBe(
      devnet.progress.stakerEvents,
    );
    expect(await harness.mismatches()).toEqual([]);
  });
});
