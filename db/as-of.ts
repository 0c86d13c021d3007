/**
 * Staked citizens as they were after a block, through the `staked_citizens_at` SQL function
 * (migrations 0005 and 0008), as typed staked_citizens rows. A block beyond the indexed one is
 * refused by the function (SQLSTATE CS416), never answered with today's rows.
 */
import { getTableColumns, sql } from "drizzle-orm";
import type { Database } from "./client.ts";
import { type StakedCitizen, stakedCitizens } from "./schema.ts";

const columns = Object.entries(getTableColumns(stakedCitizens));

export async function stakedCitizensAt(
  db: Database,
  at: bigint,
  wallet?: string,
): Promise<StakedCitizen[]> {
  const rows = await db.execute<Record<string, unknown>>(
    sql`select * from staked_citizens_at(${at}, ${wallet ?? null})`,
  );
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
