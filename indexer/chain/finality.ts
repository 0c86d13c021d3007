import type { PublicClient } from "viem";

/** Used when the node has no `finalized` block tag and no depth is configured: two epochs. */
export const DEFAULT_FINALITY_DEPTH = 64;

export interface ChainTip {
  head: bigint;
  /**
   * The newest block the indexer treats as final. Chunk jobs index at or below it; above it the
   * follower goes block by block with every hash kept, and a reorg that replaces a block at or
   * below it is not followed but reported (`ReorgTooDeep`).
   */
  finalized: bigint;
}

const withoutFinalizedTag = new WeakSet<PublicClient>();
/**
 * The highest boundary each client has seen. A final block never becomes unfinal, but a head
 * can step back for a moment (a node mid-reorg, a load balancer between nodes): head − depth
 * would then drop, and a deep reorg would look like a shallow one.
 */
const highestFinalized = new WeakMap<PublicClient, bigint>();

/**
 * The head and the finality boundary. `finalityDepth` (FINALITY_DEPTH) wins when set; else the
 * node's `finalized` tag; a node that has none (older clients, some L2 RPCs) gets head minus
 * DEFAULT_FINALITY_DEPTH, and is not asked again.
 */
export async function readChainTip(
  client: PublicClient,
  finalityDepth: number | undefined,
): Promise<ChainTip> {
  const tip = await readTip(client, finalityDepth);
  const highest = highestFinalized.get(client);
  if (highest !== undefined && highest > tip.finalized) return { ...tip, finalized: highest };
  highestFinalized.set(client, tip.finalized);
  return tip;
}

async function readTip(client: PublicClient, finalityDepth: number | undefined): Promise<ChainTip> {
  const below = (head: bigint, depth: number) => (head > BigInt(depth) ? head - BigInt(depth) : 0n);
  if (finalityDepth !== undefined || withoutFinalizedTag.has(client)) {
    const head = await client.getBlockNumber();
    return { head, finalized: below(head, finalityDepth ?? DEFAULT_FINALITY_DEPTH) };
  }
  const [head, finalized] = await Promise.all([
    client.getBlockNumber(),
    client.getBlock({ blockTag: "finalized" }).then(
      (block) => block.number,
      (error: unknown) => {
        if (!isUnknownTag(error)) throw error;
        withoutFinalizedTag.add(client);
        return undefined;
      },
    ),
  ]);
  return { head, finalized: finalized ?? below(head, DEFAULT_FINALITY_DEPTH) };
}

/** Nodes without the tag answer "invalid params"/"unknown block" rather than failing transiently. */
function isUnknownTag(error: unknown): boolean {
  const text =
    error instanceof Error
      ? `${error.message} ${String((error as { details?: unknown }).details ?? "")}`
      : "";
  return /finalized|unknown block|invalid (block|params|argument)|not supported|-32602/i.test(text);
}
