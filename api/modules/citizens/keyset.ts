/**
 * Keyset pagination of a wallet's citizens: the sort keys of the listing, the condition and
 * order of a page after a cursor, and the key of a row (the next cursor).
 */
import { asc, desc, eq, type SQL, sql } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { stakedCitizens } from "../../../db/schema.ts";
import { SEASON_OF_TYPE } from "../../../lib/vocabulary.ts";
import type { CitizenType, Order, Sort } from "./model.ts";
import type { CitizenRow } from "./record.ts";

/** The columns a listing sorts and filters by: the table's, or the as-of CTE's. */
type Rows = Record<"citizenId" | "season" | "totalPoints" | "timelockEndTime", PgColumn>;

/**
 * The sort column, then the tie-breakers (type, then id): a total order over a wallet's rows,
 * in the table or in the as-of CTE that has its columns.
 */
const sortKeys = (rows: Rows) =>
  ({
    id: [rows.citizenId, rows.season],
    totalPoints: [rows.totalPoints, rows.season, rows.citizenId],
    endTime: [rows.timelockEndTime, rows.season, rows.citizenId],
  }) as const;

export function sortKeyLength(sort: Sort): number {
  return sortKeys(stakedCitizens)[sort].length;
}

export function sortKeyOf(row: SortKeyRow, sort: Sort): bigint[] {
  const values = { id: row.citizenId, totalPoints: row.totalPoints, endTime: row.timelockEndTime };
  const [season, id] = [BigInt(row.season), BigInt(row.citizenId)];
  return sort === "id" ? [id, season] : [BigInt(values[sort]), season, id];
}

/** The columns a listing's cursor is made of (sortKeyOf). */
export type SortKeyRow = Pick<
  CitizenRow,
  "season" | "citizenId" | "totalPoints" | "timelockEndTime"
>;

/**
 * A page's filter and order: every key column runs the same direction, so "after the cursor" is
 * a single row comparison the (staker, key..., season, id) indexes can serve.
 */
export function pageConditions(
  rows: Rows,
  type: CitizenType | undefined,
  sort: Sort,
  order: Order,
  paged: boolean,
) {
  const keys = sortKeys(rows)[sort];
  const conditions: SQL[] = [];
  if (type) conditions.push(eq(rows.season, SEASON_OF_TYPE[type]));
  if (paged) {
    const bound = keys.map((_, index) => sql.placeholder(`k${index}`));
    conditions.push(
      sql`(${sql.join([...keys], sql`, `)}) ${order === "asc" ? sql`>` : sql`<`} (${sql.join(bound, sql`, `)})`,
    );
  }
  return {
    conditions,
    orderBy: keys.map((column) => (order === "asc" ? asc(column) : desc(column))),
  };
}
