import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createDatabase } from "../../db/client.ts";
import { recomputeWriteStatement, recordedRows } from "../../indexer/store/projection.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { writeHistory } from "../support/synthetic-history.ts";

/**
 * The projection's rewrite of staked_citizens must not depend on staked_citizens_at's row
 * estimate (its ROWS, one figure for every call: a wallet's few citizens or a chunk's
 * thousands): whatever the planner is told, each touched citizen is compared a bounded number of
 * times, never once per row the function returns.
 */
const CITIZENS = 2_000;

type PlanNode = { Plans?: PlanNode[]; "Rows Removed by Join Filter"?: number };

/** Rows every join of the plan compared and dropped, summed. */
function rowsRemovedByJoins(node: PlanNode): number {
  return (
    (node["Rows Removed by Join Filter"] ?? 0) +
    (node.Plans ?? []).reduce((sum, child) => sum + rowsRemovedByJoins(child), 0)
  );
}

class RolledBack extends Error {}

describe("the projection's rewrite of touched citizens", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let database: ReturnType<typeof createDatabase>;
  let indexed: bigint;

  beforeAll(async () => {
    scratch = await createScratchDatabase("recompute_plan");
    database = createDatabase(scratch.url, { max: 1 });
    const events = CITIZENS * 10;
    const [point] = await writeHistory(database.db, {
      events,
      citizens: CITIZENS,
      chunkEvents: events,
      at: [events],
    });
    indexed = BigInt(point!.indexedBlock);
  });

  afterAll(async () => {
    await database?.close();
    await scratch?.drop();
  });

  test("compares each citizen with the function's rows once, whatever their estimate", async () => {
    const keys = (
      await database.db.execute<{ season: number; citizen_id: string }>(
        sql`select distinct season, citizen_id from staked_citizens_history`,
      )
    ).map((row) => ({ season: row.season, citizenId: BigInt(row.citizen_id) }));
    expect(keys.length).toBe(CITIZENS);
    const removed: Record<number, number> = {};
    for (const estimate of [1, 10, 1_000, 100_000]) {
      await database.db
        .transaction(async (tx) => {
          await tx.execute(
            sql.raw(`alter function staked_citizens_at(bigint, text, jsonb) rows ${estimate}`),
          );
          const rows = await recordedRows(tx, keys, indexed);
          const [row] = await tx.execute<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
            sql`explain (analyze, format json) ${recomputeWriteStatement(keys, rows)}`,
          );
          removed[estimate] = rowsRemovedByJoins(row!["QUERY PLAN"][0].Plan);
          throw new RolledBack();
        })
        .catch((error) => {
          if (!(error instanceof RolledBack)) throw error;
        });
    }
    // A loop over the function's rows drops about CITIZENS² / 2 of them.
    expect(removed).toEqual({ 1: 0, 10: 0, 1000: 0, 100000: 0 });
  });
});
