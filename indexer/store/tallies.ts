/**
 * The store's counts for `status`: rows by kind, and the RPC calls every process adds up in
 * `rpc_calls`. Part of `IndexerStore` (declared in index.ts); built alone from a database handle.
 */
import { and, count, eq, isNotNull, or, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { citizenStakes, citizens, readFailures, rpcCalls, stakerEvents } from "../../db/schema.ts";

export function createTalliesStore(db: Database) {
  async function counts() {
    const [failures] = await db.select({ n: count() }).from(readFailures);
    // A failing tokenURI whose citizen has a stored name or image read before: served stale.
    const [stale] = await db
      .select({ n: count() })
      .from(readFailures)
      .innerJoin(
        citizens,
        and(
          eq(citizens.season, readFailures.season),
          eq(citizens.citizenId, readFailures.citizenId),
        ),
      )
      .where(
        and(
          eq(readFailures.read, "tokenURI"),
          or(isNotNull(citizens.name), isNotNull(citizens.image)),
        ),
      );
    const [inferred] = await db
      .select({ n: count() })
      .from(citizenStakes)
      .where(eq(citizenStakes.handClaimSource, "inferred"));
    const [unexplained] = await db
      .select({ n: count() })
      .from(citizenStakes)
      .where(eq(citizenStakes.configurationSource, "inferred"));
    const [events] = await db.select({ n: count() }).from(stakerEvents);
    const [stakes] = await db.select({ n: count() }).from(citizenStakes);
    const calls = await db.select().from(rpcCalls);
    return {
      readFailures: failures?.n ?? 0,
      staleMetadata: stale?.n ?? 0,
      inferredHandClaims: inferred?.n ?? 0,
      inferredConfigurations: unexplained?.n ?? 0,
      events: events?.n ?? 0,
      citizenStakes: stakes?.n ?? 0,
      rpcCalls: Object.fromEntries(calls.map((row) => [row.method, row.calls])),
    };
  }

  async function addRpcCalls(calls: Record<string, number>) {
    const rows = Object.entries(calls)
      .filter(([, n]) => n > 0)
      .map(([method, n]) => ({ method, calls: n }));
    if (rows.length === 0) return;
    await db
      .insert(rpcCalls)
      .values(rows)
      .onConflictDoUpdate({
        target: rpcCalls.method,
        set: { calls: sql`${rpcCalls.calls} + excluded.calls` },
      });
  }

  return { counts, addRpcCalls };
}
