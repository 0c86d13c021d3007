import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import postgres from "postgres";
import * as schema from "../../db/schema.ts";
import { createScratchDatabase } from "../../scratch/database.ts";

/** Every table db/schema.ts declares: the analyst's tables and the indexer's and API's own. */
const schemaTables = Object.values(schema)
  .filter((value) => is(value, PgTable))
  .map((table) => getTableName(table))
  .sort();

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let sql: postgres.Sql;

beforeAll(async () => {
  database = await createScratchDatabase("comments");
  sql = postgres(database.url, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await database?.drop();
});

describe("a freshly migrated database documents itself", () => {
  test("the migrations create every table of the schema", async () => {
    // drizzle keeps its own bookkeeping in the "drizzle" schema, so public holds only ours.
    const rows = await sql<{ table_name: string }[]>`
      select table_name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`;
    expect(rows.map((row) => row.table_name)).toEqual(schemaTables);
  });

  test("every table carries a comment", async () => {
    const rows = await sql<{ table_name: string }[]>`
      select c.relname as table_name from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind = 'r'
        and coalesce(obj_description(c.oid, 'pg_class'), '') = ''
      order by 1`;
    expect(rows.map((row) => row.table_name)).toEqual([]);
  });

  test("every column of every table carries a comment", async () => {
    const rows = await sql<{ column: string }[]>`
      select table_name || '.' || column_name as column from information_schema.columns
      where table_schema = 'public'
        and coalesce(col_description(format('%I.%I', table_schema, table_name)::regclass,
                                     ordinal_position::int), '') = ''
      order by table_name, ordinal_position`;
    expect(rows.map((row) => row.column)).toEqual([]);
  });
});
