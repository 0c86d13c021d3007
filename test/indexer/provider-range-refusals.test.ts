import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RpcRequestError } from "viem";
import { createChainClient } from "../../indexer/chain/client.ts";
import { fetchStakerLogs, LogRangeGovernor } from "../../indexer/chain/logs.ts";
import { readRangeRefusal } from "../../indexer/chain/range-refusals.ts";
import { startProviderNode } from "../support/provider-node.ts";
import { RANGE_REFUSALS, RATE_LIMITS } from "../support/provider-wordings.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

/**
 * Every recorded provider and client wording, answered by the provider-shaped node in front of
 * a devnet, shrinks the log range until the node answers; the logs are the node's own. Where the
 * words name a span that passes, the fetcher takes it at once (one refusal).
 */
describe("each provider's refusal of an eth_getLogs range", () => {
  let devnet: ScenarioChain;
  let from: bigint;
  let head: bigint;
  let direct: Awaited<ReturnType<typeof fetchStakerLogs>>;
  let maxSpan: number;
  let maxResults: number;

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 400, seed: "provider-wordings" });
    from = devnet.deployment.deployBlock;
    head = await devnet.client.getBlockNumber();
    direct = await fetchStakerLogs(
      createChainClient(devnet.node.rpcUrl, { jsonRpcBatch: false }),
      devnet.deployment.addresses.staker,
      from,
      head,
      new LogRangeGovernor(10_000),
    );
    const perBlock = new Map<bigint, number>();
    for (const log of direct)
      perBlock.set(log.blockNumber, (perBlock.get(log.blockNumber) ?? 0) + 1);
    maxSpan = Math.max(2, Math.floor(Number(head - from + 1n) / 4));
    // Above any one block's logs (a single block must pass), below the whole range's.
    maxResults = Math.max(...perBlock.values());
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  test("the devnet has logs over more blocks than either cap lets through at once", () => {
    expect(head - from + 1n).toBeGreaterThan(BigInt(maxSpan));
    expect(direct.length).toBeGreaterThan(maxResults);
  });

  for (const wording of RANGE_REFUSALS) {
    test(`${wording.provider}: ${wording.cap} cap`, async () => {
      const node = startProviderNode(devnet.node.rpcUrl, {
        logs:
          wording.cap === "span"
            ? { maxSpan, wording: wording.provider }
            : { maxResults, wording: wording.provider },
      });
      try {
        const logs = await fetchStakerLogs(
          createChainClient(node.url, { jsonRpcBatch: false }),
          devnet.deployment.addresses.staker,
          from,
          head,
          new LogRangeGovernor(10_000),
        );
        expect(logs).toEqual(direct);
        expect(node.stats().refusedLogRanges).toBeGreaterThan(0);
        // The node refuses every span over its cap, so equal logs mean the range shrank to fit.
        if (wording.cap === "span" && wording.suggests) {
          expect(node.stats().refusedLogRanges).toBe(1);
        }
      } finally {
        node.stop();
      }
    });
  }

  // Infura words its rate limits over -32005, the code of its oversized log answers too.
  for (const wording of RATE_LIMITS) {
    test(`${wording.provider}: a rate limit is waited out, not taken for a refused range`, async () => {
      const node = startProviderNode(devnet.node.rpcUrl, {
        budget: { requestsPerSecond: 2, retryAfterSeconds: 1, wording: wording.provider },
      });
      try {
        const governor = new LogRangeGovernor(maxSpan);
        const logs = await fetchStakerLogs(
          createChainClient(node.url, { jsonRpcBatch: false }),
          devnet.deployment.addresses.staker,
          from,
          head,
          governor,
        );
        expect(logs).toEqual(direct);
        expect(node.stats().callsOverBudget).toBeGreaterThan(0);
        expect(governor.current).toBe(maxSpan);
      } finally {
        node.stop();
      }
    }, 30_000);
  }

  test("the recognition reads each suggested span from the words alone", () => {
    const query = { from: 100n, to: 20_099n, limit: 2_000, lastPassing: 2_099n };
    for (const wording of RANGE_REFUSALS) {
      const error = new RpcRequestError({
        body: {},
        url: "http://provider",
        error: {
          code: wording.code,
          message: wording.message(query),
          ...(wording.data ? { data: wording.data(query) } : {}),
        },
      });
      const refusal = readRangeRefusal(error);
      expect({ provider: wording.provider, recognised: refusal !== undefined }).toEqual({
        provider: wording.provider,
        recognised: true,
      });
      if (wording.suggests) {
        expect({ provider: wording.provider, span: refusal?.passingSpan }).toEqual({
          provider: wording.provider,
          span: 2_000n,
        });
      }
    }
  });
});
