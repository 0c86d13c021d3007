/**
 * Staked citizens as they were after a block, through the `staked_citizens_at` SQL function
 * (db/functions/staked_citizens_at.sql), as typed staked_citizens rows. A block beyond the
 * indexed one is refused by the function (SQLSTATE CS416, thrown as BlockNotIndexed), never
 * answered with today's rows.
 */
import { getTableColumns, sql } from "drizzle-orm";
import { causeCode, innermostError } from "../lib/error-cause.ts";
import type { Database } from "./client.ts";
import { type StakedCitizen, stakedCitizens } from "./schema.ts";

const columns = Object.entries(getTableColumns(stakedCitizens));

/** The SQLSTATE staked_citizens_at raises for a block beyond the indexed one. */
const BEYOND_INDEXED_BLOCK = "CS416";

/**
 * The block is beyond the indexed block: not indexed yet, or no longer, since the checkpoint
 * can move back (a reorg, an operator's rollback) between a caller's look at it and this read.
 */
export class BlockNotIndexed extends Error {
  override name = "BlockNotIndexed";
}

export async function stakedCitizensAt(
  db: Pick<Database, "execute">,
  at: bigint,
  wallet?: string,
): Promise<StakedCitizen[]> {
  const rows = await db
    .execute<Record<string, unknown>>(
      sql`select * from staked_citizens_at(${at}, ${wallet ?? null})`,
    )
    .catch((error: unknown) => {
      if (causeCode(error) !== BEYOND_INDEXED_BLOCK) throw error;
      // The function's own words name the indexed block.
      throw new BlockNotIndexed((innermostError(error) as Error).message, { cause: error });
    });
  return rows.map(
    (row) =>
      Object.fromEntries(
        columns.map(([key, column]) => {
          const value = row[column.name];
          return [key, value === null ? null : column.mapFromDriverValue(value)];
        }),
      ) as StakedCitizen,
  );
}
