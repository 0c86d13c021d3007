import { fileURLToPath } from "node:url";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { createDatabase } from "./client.ts";

const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));

/** Applies every committed migration not yet applied; safe to run from several processes at once. */
export async function runMigrations(url: string): Promise<void> {
  const { db, client, close } = createDatabase(url, { max: 1 });
  try {
    // Serialises concurrent starters (indexer and API both migrate on start when asked).
    await client`select pg_advisory_lock(hashtext('citizen-staking:migrate'))`;
    await migrate(db, { migrationsFolder });
  } finally {
    await close();
  }
}

/** Creates the database named in `url` when it does not exist yet (the local quick start). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ""));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const rows = await client`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) await client.unsafe(`create database "${name.replaceAll('"', '""')}"`);
  } catch (error) {
    // Two starters racing to create it: the loser's "already exists" is success.
    if (!(error instanceof postgres.PostgresError && error.code === "42P04")) throw error;
  } finally {
    await client.end({ timeout: 5 });
  }
}
