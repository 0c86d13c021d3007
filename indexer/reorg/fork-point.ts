import { BlockNotFoundError, type PublicClient } from "viem";
import { type IndexerStore, REORG_WINDOW } from "../../db/indexer-store.ts";

/** No stored block within the window is on the chain any more: an operator must reindex. */
export class ReorgTooDeep extends Error {
  override name = "ReorgTooDeep";
}

async function hashOnChain(client: PublicClient, blockNumber: bigint): Promise<string | undefined> {
  try {
    return (await client.getBlock({ blockNumber })).hash.toLowerCase();
  } catch (error) {
    // The new branch can be shorter than the old one.
    if (error instanceof BlockNotFoundError) return undefined;
    throw error;
  }
}

/**
 * Where the indexed history leaves the chain: null while the checkpoint's block is still on
 * it, else the newest stored block that still is (everything above it must be rolled back).
 */
export async function findForkPoint(
  client: PublicClient,
  store: IndexerStore,
  indexedBlock: bigint,
): Promise<bigint | null> {
  const stored = await store.storedHash(indexedBlock);
  if (stored === undefined || (await hashOnChain(client, indexedBlock)) === stored) return null;
  for (const block of await store.recentBlocks(indexedBlock - 1n, Number(REORG_WINDOW))) {
    if ((await hashOnChain(client, block.number)) === block.hash) return block.number;
  }
  throw new ReorgTooDeep(`no stored block below ${indexedBlock} is on the chain any more`);
}
