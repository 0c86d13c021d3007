/**
 * Writes a migration that (re)creates SQL functions from their files in db/functions/, as
 * `drizzle-kit generate --custom --name <name>` lays one out (the SQL file, its journal entry
 * and a snapshot equal to the last one), so `migrate` applies it like any other.
 *
 *   bun db/generate-function-migration.ts <name> [function ...]
 *
 * Without functions it takes every file that differs from its latest definition in the
 * migrations, in name order; list them to choose the order (a SQL function's body must find
 * what it calls). The files say CREATE OR REPLACE, so the migration runs on any database;
 * a changed argument list or return type needs a DROP FUNCTION written by hand first.
 */
import { readFileSync, writeFileSync } from "node:fs";
import {
  BREAKPOINT,
  changedFunctionFiles,
  functionFiles,
  GENERATED_HEADER,
  migrationFiles,
  migrationsFolder,
} from "./sql-functions.ts";

/** A command line that cannot make a migration: the message says why. */
export class FunctionMigrationRefused extends Error {
  override name = "FunctionMigrationRefused";
}

export function functionMigration(names: string[]): string {
  const files = functionFiles();
  const chosen =
    names.length === 0
      ? changedFunctionFiles(files, migrationFiles())
      : names.map((name) => {
          const file = files.find((candidate) => candidate.name === name);
          if (!file) throw new FunctionMigrationRefused(`no file db/functions/${name}.sql`);
          return file;
        });
  if (chosen.length === 0) {
    throw new FunctionMigrationRefused("every function file equals its latest migration");
  }
  const bodies = chosen.map((file) => `-- db/functions/${file.name}.sql\n${file.text.trim()}`);
  return `${GENERATED_HEADER}\n${bodies.join(`${BREAKPOINT}\n`)}\n`;
}

function main() {
  const [name, ...names] = process.argv.slice(2);
  if (!name || !/^[a-z0-9_]+$/.test(name)) {
    throw new FunctionMigrationRefused(
      "usage: bun db/generate-function-migration.ts <name: lowercase, digits, _> [function ...]",
    );
  }
  const journalPath = `${migrationsFolder}/meta/_journal.json`;
  const journal = JSON.parse(readFileSync(journalPath, "utf8"));
  const last = journal.entries.at(-1);
  const idx = last.idx + 1;
  const tag = `${String(idx).padStart(4, "0")}_${name}`;
  const snapshotPath = (i: number) =>
    `${migrationsFolder}/meta/${String(i).padStart(4, "0")}_snapshot.json`;
  const snapshot = JSON.parse(readFileSync(snapshotPath(last.idx), "utf8"));
  writeFileSync(`${migrationsFolder}/${tag}.sql`, functionMigration(names));
  writeFileSync(
    snapshotPath(idx),
    `${JSON.stringify({ ...snapshot, id: crypto.randomUUID(), prevId: snapshot.id }, null, 2)}`,
  );
  journal.entries.push({ idx, version: last.version, when: Date.now(), tag, breakpoints: true });
  writeFileSync(journalPath, `${JSON.stringify(journal, null, 2)}`);
  console.log(`wrote db/migrations/${tag}.sql`);
}

if (import.meta.main) main();
