import type { PublicClient } from "viem";
import { lacksBlock, NodeBehind } from "../chain/node-behind.ts";
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

/** The node's hash of a block; undefined when the node does not have that block. */
export async function hashOnChain(
  client: PublicClient,
  blockNumber: bigint,
): Promise<string | undefined> {
  try {
    return (await client.getBlock({ blockNumber })).hash.toLowerCase();
  } catch (error) {
    if (lacksBlock(error)) return undefined;
    throw error;
  }
}

/**
 * The node's hash of a block below one it has shown: on one node's chain every such block
 * exists, so a "not found" comes from another node behind this one (a load balancer's backend)
 * and proves nothing; the question waits.
 */
async function hashBelowKnown(client: PublicClient, blockNumber: bigint): Promise<string> {
  const hash = await hashOnChain(client, blockNumber);
  if (hash === undefined) throw new NodeBehind(blockNumber);
  return hash;
}

/**
 * Where the indexed history leaves the chain: null while the checkpoint's block is still on
 * it, else the newest stored block that still is (everything above it must be rolled back).
 * Above the finality boundary every block's hash is stored, so the fork point is exact there.
 *
 * Only a block the node has, with another hash than the stored one, shows a fork. A node
 * without the checkpoint's block is behind it, or on a shorter branch: its own newest block
 * tells which (NodeBehind while that block is ours; the walk down from it when it is not).
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
  const changed =
    onChain === undefined ? await newestReplaced(client, store, indexedBlock) : indexedBlock;
  return forkPointBelow(client, store, changed, finalized);
}

/**
 * The node lacks the checkpoint's block. The newest stored block at or below the node's head is
 * the one to compare: the node's own, so a hash there answers. Ours: the node is behind the
 * checkpoint (or its branch only lost blocks, which looks the same until it grows a new one).
 * Another: the chain left ours at or below it. Returns that replaced block.
 */
async function newestReplaced(
  client: PublicClient,
  store: IndexerStore,
  indexedBlock: bigint,
): Promise<bigint> {
  const head = await client.getBlockNumber();
  // It says it has the block it just lacked: two nodes answered (a load balancer); ask again.
  if (head >= indexedBlock) throw new NodeBehind(indexedBlock, head);
  const [newest] = await store.recentBlocks(head, 1);
  if (!newest) throw new NodeBehind(indexedBlock, head);
  const onChain = await hashOnChain(client, newest.number);
  if (onChain === undefined || onChain === newest.hash) throw new NodeBehind(indexedBlock, head);
  return newest.number;
}

/** The fork point below `changed`, a stored block the node holds with another hash. */
async function forkPointBelow(
  client: PublicClient,
  store: IndexerStore,
  changed: bigint,
  finalized: bigint,
): Promise<bigint> {
  let lowestChanged = changed;
  for (const block of await store.recentBlocks(changed - 1n, Number(HASHES_KEPT))) {
    if ((await hashBelowKnown(client, block.number)) === block.hash) {
      if (lowestChanged <= finalized)
        throw new ReorgTooDeep(lowestChanged, block.number, finalized);
      return block.number;
    }
    lowestChanged = block.number;
  }
  throw new ReorgTooDeep(
    lowestChanged,
    await newestEventBlockOnChain(client, store, lowestChanged),
    finalized,
  );
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
    if ((await hashBelowKnown(client, block.number)) === block.hash) {
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
