import { max } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { indexerCheckpoints } from "../db/schema.ts";

/**
 * A one-row CTE holding the checkpoint's indexed block (null before the first checkpoint). Each
 * query selects from it and left-joins its own rows, so it always answers the block, found or not,
 * in the same round trip.
 */
export function indexedBlockSource(db: Database) {
  return db
    .$with("checkpoint")
    .as(
      db
        .select({ indexedBlock: max(indexerCheckpoints.indexedBlock).as("indexed_block") })
        .from(indexerCheckpoints),
    );
}

export const INDEXED_BLOCK_HEADER = "x-indexed-block";

/** Marks the response (errors included) with the block its data reflects, when known. */
export function setIndexedBlock(
  set: { headers: Record<string, unknown> },
  indexedBlock: bigint | null,
): void {
  if (indexedBlock !== null) set.headers[INDEXED_BLOCK_HEADER] = indexedBlock.toString();
}
