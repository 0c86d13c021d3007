import { describe, expect, test } from "bun:test";
import { createPublicClient, encodeFunctionData, erc20Abi, http } from "viem";
import { startAnvil } from "../../devnet/anvil.ts";
import { startRpcProxy } from "../support/rpc-proxy.ts";
import { functionNames } from "../support/view-calls.ts";

describe("the proxy the backfill bench counts the indexer's calls with", () => {
  test("counts HTTP requests, batch elements by method, repeated eth_calls, the calls inside a deployless multicall, and requests a client gave up on", async () => {
    const node = await startAnvil();
    const proxy = startRpcProxy(node.rpcUrl, {
      delayMs: 0,
      functionNames: functionNames([erc20Abi]),
    });
    const slow = startRpcProxy(node.rpcUrl, { delayMs: 300 });
    try {
      const to = "0x000000000000000000000000000000000000dEaD";
      const totalSupply = encodeFunctionData({ abi: erc20Abi, functionName: "totalSupply" });
      const balanceOf = encodeFunctionData({
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [to],
      });
      const batching = createPublicClient({ transport: http(proxy.url, { batch: true }) });
      const blockNumber = await batching.getBlockNumber();
      // One HTTP request carrying the same eth_call twice.
      await Promise.all([
        batching.call({ to, data: totalSupply, blockNumber }),
        batching.call({ to, data: totalSupply, blockNumber }),
      ]);
      // One eth_call carrying both reads in a deployless multicall.
      const multicalling = createPublicClient({
        transport: http(proxy.url),
        batch: { multicall: { deployless: true } },
      });
      await Promise.all([
        multicalling.call({ to, data: totalSupply, blockNumber }),
        multicalling.call({ to, data: balanceOf, blockNumber }),
      ]);
      const tally = proxy.tally();
      expect(tally).toMatchObject({
        httpRequests: 3,
        calls: 4,
        callsByMethod: { eth_blockNumber: 1, eth_call: 3 },
        ethCalls: 3,
        duplicateEthCalls: 1,
        multicallEthCalls: 1,
        singleEthCallsByFunction: { totalSupply: 2 },
        viewCalls: 4,
        viewCallsByFunction: { totalSupply: 3, balanceOf: 1 },
        duplicateViewCalls: 2,
        duplicateViewCallsByFunction: { totalSupply: 2 },
        unreadableBodies: 0,
        abandonedRequests: 0,
      });
      expect(tally.requestBytes).toBeGreaterThan(0);
      expect(tally.responseBytes).toBeGreaterThan(0);
      proxy.reset();
      expect(proxy.tally()).toMatchObject({ httpRequests: 0, calls: 0, duplicateEthCalls: 0 });

      const gaveUp = fetch(slow.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        signal: AbortSignal.timeout(50),
      });
      await expect(gaveUp).rejects.toThrow();
      const answered = await fetch(slow.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] }),
      });
      expect(((await answered.json()) as { result: string }).result).toBe("0x7a69");
      // The abandoned request is counted once the node has answered it, after its client left.
      const deadline = Date.now() + 5_000;
      while (slow.tally().abandonedRequests === 0 && Date.now() < deadline) await Bun.sleep(10);
      const delayed = slow.tally();
      expect(delayed.httpRequests).toBe(2);
      expect(delayed.abandonedRequests).toBe(1);
      expect(delayed.slowestRequestMs).toBeGreaterThanOrEqual(300);
    } finally {
      await proxy.stop();
      await slow.stop();
      await node.stop();
    }
  });
});
