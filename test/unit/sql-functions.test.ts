import { describe, expect, test } from "bun:test";
import { functionMigration } from "../../db/generate-function-migration.ts";
import {
  definedObject,
  functionFiles,
  GENERATED_HEADER,
  latestDefinitions,
  migrationFiles,
  statementsOf,
} from "../../db/sql-functions.ts";

/**
 * db/functions/*.sql are the SQL functions and triggers; the migrations hold their history. A
 * database runs what the latest migration defining each says, so that migration must say what
 * the file says (generate one with db/generate-function-migration.ts after changing a file),
 * and no migration may copy another's function by hand.
 */
const files = functionFiles();
const migrations = migrationFiles();
const latest = latestDefinitions(migrations);

describe("SQL functions as files", () => {
  test.each(files.map((file) => [file.name, file] as const))(
    "the latest migration defining %s says what its file says",
    (_name, file) => {
      const statements = statementsOf(file.text).filter((statement) => definedObject(statement));
      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        const object = definedObject(statement)!;
        expect({ object, latest: latest.get(object)?.statement }).toEqual({
          object,
          latest: statement,
        });
      }
    },
  );

  test("every function and trigger a migration defines has its file", () => {
    const inFiles = new Set(files.flatMap((file) => statementsOf(file.text).map(definedObject)));
    const orphans = [...latest.keys()].filter((object) => !inFiles.has(object));
    expect(orphans).toEqual([]);
  });

  test("no migration copies another's function or trigger", () => {
    const seen = new Map<string, string>();
    const copies: string[] = [];
    for (const migration of migrations) {
      for (const statement of statementsOf(migration.text)) {
        const object = definedObject(statement);
        if (!object?.startsWith("function") && !object?.startsWith("trigger")) continue;
        const earlier = seen.get(statement);
        if (earlier) copies.push(`${object}: ${earlier} and ${migration.name}`);
        seen.set(statement, migration.name);
      }
    }
    expect(copies).toEqual([]);
  });

  test("each generated migration is what the generator writes from the files it names", () => {
    const generated = migrations.filter((migration) => migration.text.startsWith(GENERATED_HEADER));
    expect(generated.length).toBeGreaterThan(0);
    // Only the files a migration is still the latest for: older ones are history.
    const current = generated.filter((migration) =>
      statementsOf(migration.text).every((statement) => {
        const object = definedObject(statement);
        return !object || latest.get(object)?.migration === migration.name;
      }),
    );
    for (const migration of current) {
      const names = [...migration.text.matchAll(/^-- db\/functions\/([a-z0-9_]+)\.sql$/gm)].map(
        (match) => match[1]!,
      );
      expect(functionMigration(names)).toBe(migration.text);
    }
  });
});
