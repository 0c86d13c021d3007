/**
 * A process frozen or cut off from the network in the middle of a write leaves its session
 * inside a transaction, holding locks every other writer needs. Postgres must end that session
 * itself; nothing else tells it the client is gone.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createDatabase, SILENT_SESSION_MS } from "../../db/client.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

/** The lock every checkpoint move takes (indexer/store). */
const WRITERS_LOCK = sql`select pg_advisory_xact_lock(hashtext('citizen-staking:index'))`;

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
const pools: ReturnType<typeof createDatabase>[] = [];

beforeAll(async () => {
  scratch = await createScratchDatabase("silent-session");
});

afterAll(async () => {
  for (const pool of pools) await pool.close().catch(() => {});
  await scratch?.drop();
});

test(
  "a session silent inside a transaction loses the writers' lock within SILENT_SESSION_MS",
  async () => {
    const silent = createDatabase(scratch.url, { max: 1 });
    const writer = createDatabase(scratch.url, { max: 1 });
    pools.push(silent, writer);
    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    // Takes the lock, then says nothing more: what the server sees of a frozen or cut-off client.
    const ended = silent.db
      .transaction(async (tx) => {
        await tx.execute(WRITERS_LOCK);
        holding();
        await new Promise(() => {});
      })
      .catch((error: unknown) => error);
    await held;

    const started = performance.now();
    const bound = SILENT_SESSION_MS + LOADED_MACHINE_MS;
    const taken = await Promise.race([
      writer.db.transaction((tx) => tx.execute(WRITERS_LOCK)).then(() => "taken" as const),
      Bun.sleep(bound).then(() => "still waiting" as const),
    ]);
    const waitedMs = performance.now() - started;
    console.log(
      `silent-session: another writer took the lock after ${Math.round(waitedMs)} ms (SILENT_SESSION_MS ${SILENT_SESSION_MS})`,
    );
    expect(taken).toBe("taken");
    expect(waitedMs).toBeGreaterThan(SILENT_SESSION_MS - 1_000);
    // The silent session was ended by the server, not left waiting.
    const [, rows] = await Promise.all([
      ended,
      writer.client`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and state = 'idle in transaction'`,
    ]);
    expect(rows[0]?.n).toBe(0);
  },
  2 * LOADED_MACHINE_MS + SILENT_SESSION_MS,
);
