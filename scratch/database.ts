/**
 * Scratch Postgres databases, one per test file or benchmark run: migrated when created,
 * dropped after. Shared by test/ and bench/.
 */
import postgres from "postgres";
import { runMigrations } from "../db/migrate.ts";
import { config } from "../lib/config.ts";
import { withDatabase } from "../lib/database-url.ts";

/** The server of DATABASE_URL, reached through its always-present "postgres" database. */
const ADMIN_URL = withDatabase(config.databaseUrl, "postgres");

/**
 * A fresh, migrated database of this test run's own; `drop()` removes it. `server` is another
 * server's URL to make it on (a test's private cluster); DATABASE_URL's server otherwise.
 */
export async function createScratchDatabase(label = "test", server = ADMIN_URL) {
  const name = `cs_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const url = withDatabase(server, name);
  await runMigrations(url);
  return {
    name,
    url,
    async drop() {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}
