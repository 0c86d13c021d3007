/**
 * The store's health records: how each long-running role last ended, read by `status` and
 * /readyz. Part of `IndexerStore` (declared in index.ts); built alone from a database handle.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { indexerHealth } from "../../db/schema.ts";

export type HealthRow = typeof indexerHealth.$inferSelect;

/** The long-running roles that report their health. */
export type IndexerRole = "follow" | "chunks";

export type HealthOutcome = { ok: true } | { ok: false; error: string; fatal: boolean };

/** Health rows are written at most this often while all is well (a tick runs every 200 ms). */
const HEALTH_OK_INTERVAL_MS = 5_000;

export function createHealthStore(db: Database) {
  const lastOkWrite = new Map<IndexerRole, number>();
  async function recordHealth(role: IndexerRole, outcome: HealthOutcome) {
    if (outcome.ok) {
      // A success only needs writing when it ends a failure or the last one is getting old.
      const last = lastOkWrite.get(role) ?? 0;
      if (Date.now() - last < HEALTH_OK_INTERVAL_MS) return;
      lastOkWrite.set(role, Date.now());
      await db
        .insert(indexerHealth)
        .values({ component: role, okAt: sql`now()` })
        .onConflictDoUpdate({
          target: indexerHealth.component,
          set: { okAt: sql`now()`, failingSince: null, fatal: false },
        });
      return;
    }
    lastOkWrite.delete(role);
    await db
      .insert(indexerHealth)
      .values({
        component: role,
        failingSince: sql`now()`,
        lastError: outcome.error,
        lastErrorAt: sql`now()`,
        fatal: outcome.fatal,
      })
      .onConflictDoUpdate({
        target: indexerHealth.component,
        set: {
          failingSince: sql`coalesce(${indexerHealth.failingSince}, now())`,
          lastError: outcome.error,
          lastErrorAt: sql`now()`,
          fatal: outcome.fatal,
        },
      });
  }

  return { recordHealth, health: () => db.select().from(indexerHealth) };
}
