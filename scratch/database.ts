/**
 * Scratch Postgres databases, one per test file or benchmark run: migrated when created,
 * dropped after. Shared by test/ and bench/.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { runMigrations } from "../db/migrate.ts";
import { config } from "../lib/config.ts";
import { withDatabase } from "../lib/database-url.ts";

/** The server of DATABASE_URL, reached through its always-present "postgres" database. */
const ADMIN_URL = withDatabase(config.databaseUrl, "postgres");

/** The suite's tablespace in memory, on DATABASE_URL's server only (memory-tablespace.ts). */
const TABLESPACE = process.env.SCRATCH_TABLESPACE || undefined;

const MIGRATIONS_DIR = join(import.meta.dir, "..", "db", "migrations");

let templateName: Promise<string> | undefined;

/** The template's name: a hash of every migration file, so a new migration makes a new one. */
function migratedTemplateName(): Promise<string> {
  templateName ??= (async () => {
    const hasher = new Bun.CryptoHasher("sha256");
    const files = (await readdir(MIGRATIONS_DIR, { recursive: true })).filter(
      (file) => file.endsWith(".sql") || file.endsWith(".json"),
    );
    for (const file of files.sort()) {
      hasher.update(`${file}\0`);
      hasher.update(await Bun.file(join(MIGRATIONS_DIR, file)).arrayBuffer());
    }
    return `cs_template_${hasher.digest("hex").slice(0, 16)}`;
  })();
  return templateName;
}

/**
 * A migrated database to copy scratch ones from, made once per server and migration set.
 * Running the migrations takes a second of a loaded machine's time per database, a copy of the
 * template tens of milliseconds. It takes no connections once made (Postgres copies a template
 * only while no one is connected to it); files starting at once wait on one advisory lock.
 */
async function ensureTemplate(admin: postgres.Sql, server: string): Promise<string> {
  const template = await migratedTemplateName();
  // Marked a template only once migrated: a name without the mark is a build cut short.
  const ready = async (sql: postgres.Sql | postgres.ReservedSql) =>
    (await sql`select 1 from pg_database where datname = ${template} and datistemplate`).length > 0;
  if (await ready(admin)) return template;
  const lock = await admin.reserve();
  try {
    await lock`select pg_advisory_lock(hashtext('citizen-staking:scratch-template'))`;
    if (!(await ready(lock))) {
      await lock.unsafe(`drop database if exists "${template}" with (force)`);
      await lock.unsafe(`create database "${template}"`);
      await runMigrations(withDatabase(server, template));
      await lock.unsafe(
        `alter database "${template}" with is_template true allow_connections false`,
      );
    }
  } finally {
    await lock`select pg_advisory_unlock(hashtext('citizen-staking:scratch-template'))`;
    lock.release();
  }
  return template;
}

/**
 * A fresh, migrated database of this test run's own; `drop()` removes it. `server` is another
 * server's URL to make it on (a test's private cluster); DATABASE_URL's server otherwise.
 */
export async function createScratchDatabase(label = "test", server = ADMIN_URL) {
  const name = `cs_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
  // Closed between create and drop: a test file holds several scratch databases at once, and
  // the suite's files together once came within 9 of the server's 100 connections.
  const admin = postgres(server, { max: 2, onnotice: () => {} });
  try {
    const template = await ensureTemplate(admin, server);
    const where = TABLESPACE && server === ADMIN_URL ? ` tablespace "${TABLESPACE}"` : "";
    await admin.unsafe(`create database "${name}" template "${template}"${where}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = withDatabase(server, name);
  return {
    name,
    url,
    async drop() {
      const dropper = postgres(server, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await dropper.end({ timeout: 5 });
      }
    },
  };
}
