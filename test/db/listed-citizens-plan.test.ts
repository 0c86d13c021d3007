import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createDatabase } from "../../db/client.ts";
import { recordedRows } from "../../indexer/store/projection.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { writeHistory } from "../support/synthetic-history.ts";

/**
 * The projection reads the citizens a write touched through staked_citizens_at, on connections
 * that live for a whole backfill. A plan Postgres made at a session's first call, while the
 * tables were nearly empty, must not outlive their growth: a stake read by scanning
 * citizen_stakes once per citizen made each write cost the history written before it.
 */
const CITIZENS = 200;
const EVENTS = CITIZENS * 10;

describe("the projection's read of listed citizens, on one long-lived session", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let database: ReturnType<typeof createDatabase>;

  beforeAll(async () => {
    scratch = await createScratchDatabase("listed_citizens_plan");
    // One connection: every chunk's projection, and the reads below, share one session's plans.
    database = createDatabase(scratch.url, { max: 1 });
    // Chunks of 20 events: the first projections run while the tables hold a block's rows.
    await writeHistory(database.db, {
      events: EVENTS,
      citizens: CITIZENS,
      chunkEvents: 20,
      at: [EVENTS],
    });
  });

  afterAll(async () => {
    await database?.close();
    await scratch?.drop();
  });

  test("finds each citizen's stake and row by key once the tables have grown, never by a scan", async () => {
    const [checkpoint] = await database.db.execute<{ indexed_block: string }>(
      sql`select indexed_block from indexer_checkpoints`,
    );
    const keys = (
      await database.db.execute<{ season: number; citizen_id: string }>(
        sql`select distinct season, citizen_id from staked_citizens_history`,
      )
    ).map((row) => ({ season: row.season, citizenId: BigInt(row.citizen_id) }));
    const scanned = await database.db.transaction(async (tx) => {
      // Counts not yet flushed to the cumulative views, by table: the read's are the difference.
      const scans = async () =>
        new Map(
          (
            await tx.execute<{ relname: string; seq_scan: string }>(
              sql`select relname, seq_scan from pg_stat_xact_user_tables`,
            )
          ).map((row) => [row.relname, Number(row.seq_scan)]),
        );
      const before = await scans();
      const rows = await recordedRows(tx, keys, BigInt(checkpoint!.indexed_block));
      expect(rows.length).toBeGreaterThan(0);
      const after = await scans();
      return ["citizen_stakes", "citizens", "staked_citizens_history"].map((table) => [
        table,
        (after.get(table) ?? 0) - (before.get(table) ?? 0),
      ]);
    });
    expect(scanned).toEqual([
      ["citizen_stakes", 0],
      ["citizens", 0],
      ["staked_citizens_history", 0],
    ]);
  });
});
