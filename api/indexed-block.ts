import { max, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { indexerCheckpoints } from "../db/schema.ts";

/**
 * A one-row CTE holding the checkpoint's indexed block (null before the first checkpoint) and the
 * data version. Each query selects from it and left-joins its own rows, so it always answers the
 * block, found or not, in the same round trip.
 *
 * The version is the block plus the checkpoint's last write time: after a reorg the checkpoint
 * can come back to the same height with other data, and the write time tells the two apart, so
 * ETags and cached bodies keyed by the version never outlive the data they describe.
 */
export function indexedBlockSource(db: Database) {
  return db.$with("checkpoint").as(
    db
      .select({
        indexedBlock: max(indexerCheckpoints.indexedBlock).as("indexed_block"),
        version:
          sql<string>`concat(max(${indexerCheckpoints.indexedBlock}), '.', (extract(epoch from max(${indexerCheckpoints.updatedAt})) * 1000000)::bigint)`.as(
            "data_version",
          ),
      })
      .from(indexerCheckpoints),
  );
}

export const INDEXED_BLOCK_HEADER = "x-indexed-block";

/** The channel db/functions/notify_indexed_block.sql's trigger notifies with the new block whenever a checkpoint moves. */
export const INDEXED_BLOCK_CHANNEL = "indexed_block";

/** Marks the response (errors included) with the block its data reflects, when known. */
export function setIndexedBlock(
  set: { headers: Record<string, unknown> },
  indexedBlock: bigint | null,
): void {
  if (indexedBlock !== null) set.headers[INDEXED_BLOCK_HEADER] = indexedBlock.toString();
}
