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

/**
 * Builds rows from the driver's value arrays along the select's field paths, as one generated
 * function of object literals: the shape is fixed per statement, and a literal costs a tenth of
 * filling an object key by key (about 1 µs a 41-column row, measured; a listing page reads
 * up to 101 rows). The keys are our own schema's field names, each written as a JSON string;
 * fieldPaths makes the paths at most two deep, and a nested object's columns contiguous.
 */
function rowBuilder(columns: string[][]): (values: unknown[]) => Record<string, unknown> {
  const members: string[] = [];
  for (let index = 0; index < columns.length; index++) {
    const [key, nestedKey] = columns[index]!;
    if (nestedKey === undefined) {
      members.push(`${JSON.stringify(key)}: v[${index}] ?? null`);
      continue;
    }
    // A nested object's columns are contiguous: its first column decides whether it is null.
    let end = index;
    while (columns[end + 1]?.[0] === key && columns[end + 1]?.length === 2) end++;
    const inner = columns
      .slice(index, end + 1)
      .map(([, name], offset) => `${JSON.stringify(name)}: v[${index + offset}] ?? null`);
    members.push(`${JSON.stringify(key)}: v[${index}] == null ? null : { ${inner.join(", ")} }`);
    index = end;
  }
  return new Function("v", `return { ${members.join(", ")} };`) as (
    values: unknown[],
  ) => Record<string, unknown>;
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
