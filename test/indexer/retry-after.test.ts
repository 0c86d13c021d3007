import { afterAll, beforeAll, expect, test } from "bun:test";
import { startAnvil } from "../../devnet/anvil.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import { RequestBudget } from "../../indexer/chain/request-budget.ts";
import { type ProviderNode, startProviderNode } from "../support/provider-node.ts";

let anvil: Awaited<ReturnType<typeof startAnvil>>;
let node: ProviderNode;

beforeAll(async () => {
  anvil = await startAnvil();
  // The key's real budget is lower than this process was told (another process shares it).
  node = startProviderNode(anvil.rpcUrl, {
    budget: { requestsPerSecond: 10, retryAfterSeconds: 1 },
  });
});

afterAll(async () => {
  node?.stop();
  await anvil?.stop();
});

test("a 429's Retry-After holds back every call of the process, not only the refused one", async () => {
  const client = createChainClient(node.url, { budget: new RequestBudget(20) });
  const calls: Promise<string>[] = [];
  // One call every 25 ms for a second: each its own HTTP request, as independent jobs send them.
  for (let i = 0; i < 40; i++) {
    calls.push(client.request({ method: "eth_blockNumber" }));
    await Bun.sleep(25);
  }
  const heads = await Promise.all(calls);
  expect(new Set(heads).size).toBe(1);
  const stats = node.stats();
  // After the first refusal nothing leaves until Retry-After has passed, so the provider sees
  // a refusal per pause, not one per call sent meanwhile.
  expect(stats.callsOverBudget).toBeGreaterThan(0);
  expect(stats.callsOverBudget).toBeLessThanOrEqual(5);
}, 60_000);
