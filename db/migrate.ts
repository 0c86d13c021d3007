import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { parseDatabaseUrl, withDatabase } from "../lib/database-url.ts";
import { createDatabase } from "./client.ts";
import journal from "./migrations/meta/_journal.json";

const sourceFolder = fileURLToPath(new URL("./migrations", import.meta.url));

/** A compiled binary built without its migrations (not by scripts/build-binary.sh). */
export class MigrationsNotEmbedded extends Error {
  override name = "MigrationsNotEmbedded";
}

/**
 * Runs `work` with a folder laid out as drizzle reads it. A compiled binary has no source tree:
 * there the folder is a temporary copy of the SQL files `bun build --compile` embedded
 * (scripts/build-binary.sh passes them) and of the journal, bundled through the import above.
 */
async function withMigrationsFolder(work: (folder: string) => Promise<void>): Promise<void> {
  if (!Bun.isStandaloneExecutable) return work(sourceFolder);
  const embedded = new Map(Bun.embeddedFiles.map((file) => [(file as Bun.BunFile).name, file]));
  const folder = await mkdtemp(join(tmpdir(), "citizen-staking-migrations-"));
  try {
    await mkdir(join(folder, "meta"));
    await writeFile(join(folder, "meta", "_journal.json"), JSON.stringify(journal));
    for (const { tag } of journal.entries) {
      const file = embedded.get(`${tag}.sql`);
      if (!file) {
        throw new MigrationsNotEmbedded(
          `migration ${tag}.sql is not embedded in this binary; build it with scripts/build-binary.sh`,
        );
      }
      await Bun.write(join(folder, `${tag}.sql`), file);
    }
    await work(folder);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** Applies every committed migration not yet applied; safe to run from several processes at once. */
export async function runMigrations(url: string): Promise<void> {
  const { db, client, close } = createDatabase(url, { max: 1 });
  try {
    // Serialises concurrent starters (indexer and API both migrate on start when asked).
    await client`select pg_advisory_lock(hashtext('citizen-staking:migrate'))`;
    await withMigrationsFolder((migrationsFolder) => migrate(db, { migrationsFolder }));
  } finally {
    await close();
  }
}

/** Creates the database named in `url` when it does not exist yet (the local quick start). */
export async function ensureDatabase(url: string): Promise<void> {
  const name = parseDatabaseUrl(url).database;
  if (!name) return;
  const client = postgres(withDatabase(url, "postgres"), { max: 1, onnotice: () => {} });
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
