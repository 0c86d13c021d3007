import type { PublicClient } from "viem";

export class ChainMismatch extends Error {
  override name = "ChainMismatch";
}

/**
 * The node's chain id; with CHAIN_ID set, a node serving another chain is refused. The check node
 * (`source` RPC_CHECK_URL) is held to the indexer's node's chain.
 */
export async function readChainId(
  client: PublicClient,
  expected?: number,
  source = "RPC_URL",
): Promise<number> {
  const chainId = await client.getChainId();
  if (expected !== undefined && expected !== chainId) {
    const wanted = source === "RPC_URL" ? "CHAIN_ID is" : "the node at RPC_URL serves chain";
    throw new ChainMismatch(
      `${wanted} ${expected} but the node at ${source} serves chain ${chainId}`,
    );
  }
  return chainId;
}
