import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { type ProviderNode, startProviderNode } from "../support/provider-node.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

describe("an RPC request budget", () => {
  let devnet: ScenarioChain;
  let node: ProviderNode;
  const harnesses: TestIndexer[] = [];

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 600, seed: "request-budget" });
    // A free-tier key: 25 calls a second, each call of a batch counted, 429 beyond.
    node = startProviderNode(devnet.node.rpcUrl, {
      latencyMs: 20,
      jitterMs: 20,
      budget: { requestsPerSecond: 25 },
    });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    node?.stop();
    await devnet?.stop();
  });

  test("under a budget of 25 calls a second the backfill never goes over it, and indexes the chain", async () => {
    const harness = await indexDevnet(devnet, {
      label: "request-budget",
      rpcUrl: node.url,
      options: { chunkSize: 2, rpcMaxRequestsPerSecond: 25 },
      timeoutMs: 170_000,
    });
    harnesses.push(harness);
    const stats = node.stats();
    // Enough calls that an unbudgeted backfill's bursts (4 jobs, batches of 32) would go over.
    expect(stats.calls).toBeGreaterThan(50);
    expect(stats.callsOverBudget).toBe(0);
    expect(await harness.mismatches()).toEqual([]);
  }, 180_000);
});
