import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { tableSnapshot } from "../support/snapshot.ts";

describe("a misbehaving RPC provider", () => {
  let devnet: ScenarioChain;
  const harnesses: TestIndexer[] = [];
  let proxy: ReturnType<typeof startRpcFaultProxy>;

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 2_000, seed: "rpc-faults" });
    proxy = startRpcFaultProxy({
      upstream: devnet.node.rpcUrl,
      faultRate: 0.2,
      holdMs: 1_500,
      maxLogSpan: 3,
    });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    proxy?.stop();
    await devnet?.stop();
  });

  const backfill = async (label: string, rpcUrl: string) => {
    const harness = await indexDevnet(devnet, {
      label,
      rpcUrl,
      options: { chunkSize: 8, rpcTimeoutMs: 1_000 },
      timeoutMs: 150_000,
    });
    harnesses.push(harness);
    return harness;
  };

  test("errors, 429s, timeouts, truncated bodies and a capped log range change the time taken, not the tables", async () => {
    const direct = await backfill("rpc-direct", devnet.node.rpcUrl);
    const faulty = await backfill("rpc-faulty", proxy.url);
    for (const fault of [
      "error",
      "rate-limit",
      "timeout",
      "truncated",
      "refusedLogRanges",
    ] as const) {
      expect(proxy.counts[fault]).toBeGreaterThan(0);
    }
    expect(await tableSnapshot(faulty.database.url)).toEqual(
      await tableSnapshot(direct.database.url),
    );
    expect(await direct.mismatches()).toEqual([]);
  });
});
