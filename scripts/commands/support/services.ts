import { ensureDatabase, runMigrations } from "../../../db/migrate.ts";
import { createIndexerStore } from "../../../indexer/store/index.ts";
import { config } from "../../../lib/config.ts";
import { checkPostgres, checkRedis } from "../../../lib/connection-checks.ts";
import { failureLine, Unreachable } from "../../../lib/fail.ts";
import { logger } from "../../../lib/log.ts";
import { isTransientRpcFailure } from "../../../lib/rpc-failures.ts";
import { type ChainSettings, checkChainSettings } from "../../../ops/chain-settings.ts";
import { withDatabase } from "./with-database.ts";

const log = logger("cli");

/**
 * Creates the database if needed, applies every migration, and writes again the stored API
 * records another version wrote (docs/decisions/stored-records.md), so a deployment that changed
 * the record serves stored ones again without a `reproject`.
 */
export async function migrate() {
  await ensureDatabase(config.databaseUrl);
  await runMigrations(config.databaseUrl);
  const refilled = await withDatabase((db) => createIndexerStore(db).refillRecords());
  if (refilled > 0) log.info({ refilled }, "stored API records written again for this version");
}

/**
 * Checks, at once and in one line each, the services a command needs, before it opens the
 * clients that would wait for them. `database: "may-create"` for commands that migrate first.
 */
export async function checkServices(needs: {
  database?: "existing" | "may-create";
  redis?: boolean;
  chain?: ChainSettings;
}): Promise<void> {
  await Promise.all([
    needs.database &&
      checkPostgres(config.databaseUrl, { databaseMayBeMissing: needs.database === "may-create" }),
    needs.redis && checkRedis(config.redis),
    needs.chain && checkChainSettings(needs.chain),
  ]);
}

/**
 * For long-running processes: a service that cannot be reached yet (a restart, an outage, a
 * node resetting connections or answering 503) is waited for, with one warning, as it would be
 * once running; a refusal (wrong database, role, staker, chain) still stops the process at once.
 * Each step of a start-up goes through the same waiter, so one outage is one warning.
 */
export function createStartupWaiter() {
  let waitingSince: number | undefined;
  return async function untilReachable<T>(step: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        const result = await step();
        if (waitingSince !== undefined) {
          log.info({ waitedMs: Date.now() - waitingSince }, "every service answers again");
          waitingSince = undefined;
        }
        return result;
      } catch (error) {
        if (!(error instanceof Unreachable) && !isTransientRpcFailure(error)) throw error;
        if (waitingSince === undefined) {
          log.warn({ err: failureLine(error) }, "waiting for a service to answer");
          waitingSince = Date.now();
        }
        await Bun.sleep(1_000);
      }
    }
  };
}
