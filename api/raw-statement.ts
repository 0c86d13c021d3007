/**
 * A select that drizzle builds once and the hot-read client (api/reads.ts) runs per request as a
 * prepared statement, without drizzle's per-call work: its `execute` opens tracing spans, fills
 * placeholders and maps every column through `is()` checks and its decoder, about 18 µs of a hot
 * read's ~120 µs.
 *
 * Rows come back as the driver gives them: numeric (uint256) and int8 columns as their decimal
 * strings, which the records copy into the JSON as they are (see `Raw`). A nested object (a
 * left-joined table) is null when its first column is, as drizzle's own mapping has it for the
 * not-null key columns our joins lead with.
 */
import { Column, getTableColumns, is, Param, Placeholder, SQL, Subquery, Table } from "drizzle-orm";
import type { Reads } from "./reads.ts";

/** A row as the driver gives it: bigints (numeric, int8) stay decimal strings. */
export type Raw<T> = T extends bigint
  ? string
  : T extends Date | boolean | number | string | null | undefined
    ? T
    : { [K in keyof T]: Raw<T[K]> };

/** What drizzle's select builders have and this needs (their public surface). */
interface Select<Row> {
  toSQL(): { sql: string; params: unknown[] };
  execute(): Promise<Row[]>;
  _: { selectedFields: Record<string, unknown> };
}

type Values = Record<string, unknown>;

/** The parameters in order: each a placeholder's value (encoded like drizzle does) or a constant. */
function parameterFillers(params: unknown[]): ((values: Values) => unknown)[] {
  return params.map((param) => {
    if (is(param, Placeholder)) return (values) => values[param.name];
    if (is(param, Param) && is(param.value, Placeholder)) {
      const { name } = param.value;
      return (values) => param.encoder.mapToDriverValue(values[name]);
    }
    return () => param;
  });
}

/**
 * The path of each selected column in the order drizzle writes them into the SQL (its
 * orderSelectedFields, which it does not export): a field, or an object or table one deep.
 */
function fieldPaths(fields: Record<string, unknown>, prefix: string[] = []): string[][] {
  return Object.entries(fields).flatMap(([name, field]) => {
    const path = [...prefix, name];
    if (is(field, Column) || is(field, SQL) || is(field, SQL.Aliased) || is(field, Subquery)) {
      return [path];
    }
    if (prefix.length > 0) throw new TypeError("rawStatement maps fields at most one object deep");
    return fieldPaths(is(field, Table) ? getTableColumns(field) : (field as never), path);
  });
}

/** Builds rows from the driver's value arrays along the select's field paths. */
function rowBuilder(columns: string[][]) {
  return (values: unknown[]) => {
    const row: Record<string, unknown> = {};
    let nested: Record<string, unknown> | null = null;
    let nestedKey = "";
    for (let index = 0; index < columns.length; index++) {
      const path = columns[index]!;
      const value = values[index] ?? null;
      if (path.length === 1) {
        row[path[0]!] = value;
        continue;
      }
      // A nested object's columns are contiguous: its first column decides whether it is null.
      if (path[0] !== nestedKey) {
        nestedKey = path[0]!;
        nested = value === null ? null : {};
        row[nestedKey] = nested;
      }
      if (nested !== null) nested[path[1]!] = value;
    }
    return row;
  };
}

export function rawStatement<Row>(reads: Reads, query: Select<Row>) {
  const { sql: text, params } = query.toSQL();
  const fill = parameterFillers(params);
  const build = rowBuilder(fieldPaths(query._.selectedFields));
  return {
    async execute(values: Values): Promise<Raw<Row>[]> {
      const rows = await reads.values(
        text,
        fill.map((parameter) => parameter(values)),
      );
      return rows.map(build) as Raw<Row>[];
    },
  };
}
