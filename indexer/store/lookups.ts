/**
 * The store's lookups for the stages: stored hashes and event blocks (the fork point's search),
 * event counts (a reindex's progress), and the citizens already stored (what a fetch need not
 * read). Part of `IndexerStore` (declared in index.ts); built alone from a database handle.
 */
import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { blocks, citizens, stakerEvents } from "../../db/schema.ts";
import type { CitizenKeyRow } from "./projection.ts";
import { columnArray } from "./unnest-rows.ts";

export function createLookups(db: Database) {
  async function recentBlocks(at: bigint, limit: number) {
    return db
      .select()
      .from(blocks)
      .where(lte(blocks.number, at))
      .orderBy(desc(blocks.number))
      .limit(limit);
  }

  async function storedHash(number: bigint) {
    const [row] = await db.select().from(blocks).where(eq(blocks.number, number));
    return row?.hash;
  }

  async function eventBlocks(at: bigint) {
    return db
      .selectDistinct({ number: stakerEvents.blockNumber, hash: stakerEvents.blockHash })
      .from(stakerEvents)
      .where(lte(stakerEvents.blockNumber, at))
      .orderBy(asc(stakerEvents.blockNumber));
  }

  async function countEvents(from: bigint, to: bigint) {
    const [row] = await db
      .select({ count: sql<number>`count(*)::int` })
      .from(stakerEvents)
      .where(and(gt(stakerEvents.blockNumber, from - 1n), lte(stakerEvents.blockNumber, to)));
    return row?.count ?? 0;
  }

  async function knownCitizens(keys: CitizenKeyRow[]) {
    if (keys.length === 0) return [];
    // Two array parameters, not one per citizen (a backfill chunk asks for thousands).
    const seasons = columnArray(
      citizens.season,
      keys.map((key) => key.season),
    );
    const ids = columnArray(
      citizens.citizenId,
      keys.map((key) => key.citizenId),
    );
    return db
      .select()
      .from(citizens)
      .where(
        sql`(${citizens.season}, ${citizens.citizenId}) in (select * from unnest(${seasons}, ${ids}))`,
      );
  }

  return { recentBlocks, storedHash, eventBlocks, countEvents, knownCitizens };
}
