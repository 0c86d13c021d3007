import { afterAll, beforeAll, expect, test } from "bun:test";
import { startAnvil } from "../../devnet/anvil.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import { type ProviderNode, startProviderNode } from "../support/provider-node.ts";

let anvil: Awaited<ReturnType<typeof startAnvil>>;
let node: ProviderNode;

beforeAll(async () => {
  anvil = await startAnvil();
  // A provider behind a load balancer that closes a third of connections without an answer.
  node = startProviderNode(anvil.rpcUrl, { resetRate: 0.3, seed: "resets" });
});

afterAll(async () => {
  node?.stop();
  await anvil?.stop();
});

test("connections the provider closes without an answer are retried by the client's one retry layer", async () => {
  const client = createChainClient(node.url);
  const heads = await Promise.all(Array.from({ length: 20 }, () => client.getBlockNumber()));
  expect(heads).toEqual(Array(20).fill(await createChainClient(anvil.rpcUrl).getBlockNumber()));
  expect(node.stats().resetConnections).toBeGreaterThan(0);
});
