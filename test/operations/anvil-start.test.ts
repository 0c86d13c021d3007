/**
 * Our node is the one our child bound, never whatever answers on the port: a demo already running
 * on 8545 answers eth_chainId with the devnet's chain id too, and adopting it sent two runs'
 * transactions to one chain.
 */
import { expect, test } from "bun:test";
import { AnvilPortInUse, DEVNET_CHAIN_ID, startAnvil } from "../../devnet/anvil.ts";

/** A foreign process on a port that answers like a devnet node. */
function foreignNode() {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () =>
      Response.json({ jsonrpc: "2.0", id: 1, result: `0x${DEVNET_CHAIN_ID.toString(16)}` }),
  });
}

test("a port held by another node is AnvilPortInUse naming the port, not that node", async () => {
  const holder = foreignNode();
  try {
    const started = startAnvil({ port: holder.port });
    await expect(started).rejects.toBeInstanceOf(AnvilPortInUse);
    await expect(started).rejects.toThrow(`127.0.0.1:${holder.port}`);
  } finally {
    await holder.stop(true);
  }
});

test("without a port, the node reports the one it bound and answers there", async () => {
  const node = await startAnvil();
  try {
    expect(node.rpcUrl).toBe(`http://127.0.0.1:${node.port}`);
    const response = await fetch(node.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(Number(((await response.json()) as { result: string }).result)).toBe(DEVNET_CHAIN_ID);
  } finally {
    await node.stop();
  }
});
