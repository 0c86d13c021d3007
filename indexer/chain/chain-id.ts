import type { PublicClient } from "viem";

export class ChainMismatch extends Error {
  override name = "ChainMismatch";
}

/** The node's chain id; with CHAIN_ID set, a node serving another chain is refused. */
export async function readChainId(client: PublicClient, expected?: number): Promise<number> {
  const chainId = await client.getChainId();
  if (expected !== undefined && expected !== chainId) {
    throw new ChainMismatch(
      `CHAIN_ID is ${expected} but the node at RPC_URL serves chain ${chainId}`,
    );
  }
  return chainId;
}
