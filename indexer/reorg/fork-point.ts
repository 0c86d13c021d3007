import { BlockNotFoundError, type PublicClient } from "viem";
import { HASHES_KEPT, type IndexerStore } from "../store/index.ts";

/**
 * The chain replaced an indexed block at or below the finality boundary. That should never
 * happen; when it does, the node is wrong or the chain is not the one indexed, so nothing is
 * rolled back automatically: the message names the block to go back to and the command.
 */
export class ReorgTooDeep extends Error {
  override name = "ReorgTooDeep";
  constructor(
    readonly changedBlock: bigint,
    readonly safeBlock: bigint,
    finalized: bigint,
  ) {
    super(
      `the chain replaced indexed block ${changedBlock}, at or below the finality boundary ${finalized}; indexing stopped. To index the new branch from block ${safeBlock + 1n}, run: citizen-staking rollback --to ${safeBlock}`,
    );
  }
}

export async function hashOnChain(
  client: PublicClient,
  blockNumber: bigint,
): Promise<string | undefined> {
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
 * Above the finality boundary every block's hash is stored, so the fork point is exact there.
 */
export async function findForkPoint(
  client: PublicClient,
  store: IndexerStore,
  indexedBlock: bigint,
  finalized: bigint,
): Promise<bigint | null> {
  // Asked at once (every idle follow tick asks both): a block with no stored hash costs the
  // chain's answer for nothing, and such a block is the rare first one after a checkpoint.
  const [stored, onChain] = await Promise.all([
    store.storedHash(indexedBlock),
    hashOnChain(client, indexedBlock),
  ]);
  if (stored === undefined || onChain === stored) return null;
  let changed = indexedBlock;
  for (const block of await store.recentBlocks(indexedBlock - 1n, Number(HASHES_KEPT))) {
    if ((await hashOnChain(client, block.number)) === block.hash) {
      if (changed <= finalized) throw new ReorgTooDeep(changed, block.number, finalized);
      return block.number;
    }
    changed = block.number;
  }
  throw new ReorgTooDeep(changed, await newestEventBlockOnChain(client, store, changed), finalized);
}

/**
 * Below the kept hashes, the stored events still name their blocks' hashes. The chain is a
 * line, so once one of them is on the chain every older one is: a binary search finds the
 * newest, in a few calls.
 */
async function newestEventBlockOnChain(
  client: PublicClient,
  store: IndexerStore,
  below: bigint,
): Promise<bigint> {
  const candidates = await store.eventBlocks(below - 1n);
  let low = 0;
  let high = candidates.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const block = candidates[middle]!;
    if ((await hashOnChain(client, block.number)) === block.hash) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  if (found >= 0) return candidates[found]!.number;
  // Nothing stored is on the chain: start again before the first indexed event (or from 0).
  const first = candidates[0];
  return first && first.number > 0n ? first.number - 1n : 0n;
}
