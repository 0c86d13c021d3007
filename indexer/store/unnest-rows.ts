/**
 * Many rows of one table as one SELECT with one parameter per column, for
 * `tx.insert(table).select(unnestRows(table, rows))`:
 *
 *   select u."a", u."b", now() from unnest($1::bigint[], $2::text[]) as u("a", "b")
 *
 * drizzle's `.values(rows)` builds a query chunk and a bound parameter for every value; in a
 * backfill that building took more CPU than Postgres spent storing the rows. Here the column
 * list, the array types and each value's encoding come from the drizzle table, so a column added
 * to db/schema.ts is written with no change here, and the insert keeps drizzle's `onConflict*`
 * and typed `returning`.
 */
import { type Column, getTableColumns, getTableName, is, SQL, sql } from "drizzle-orm";
import { PgEnumColumn, type PgTable } from "drizzle-orm/pg-core";

/** Some rows leave a column with a default unset while others set it. */
export class MixedDefaults extends Error {
  override name = "MixedDefaults";
}

/** A column this encoding does not cover (an array column, or a default computed in JS). */
export class UnsupportedBulkColumn extends Error {
  override name = "UnsupportedBulkColumn";
}

interface ColumnPlan {
  key: string;
  column: Column;
  /** The column's name, as unnest's output column. */
  alias: SQL;
  /** Its type as an array, for the parameter's cast. */
  arrayType: SQL;
}

const plans = new WeakMap<PgTable, ColumnPlan[]>();

/** The insertable columns in table order: the order drizzle's insert lists them in. */
function planOf(table: PgTable): ColumnPlan[] {
  const known = plans.get(table);
  if (known) return known;
  const plan = Object.entries(getTableColumns(table))
    // As drizzle's insert: a column generated always is Postgres's to fill.
    .filter(([, column]) => column.generated === undefined || column.generated.type === "byDefault")
    .map(([key, column]) => {
      const type = column.getSQLType();
      if (type.endsWith("]") || column.defaultFn || column.onUpdateFn) {
        throw new UnsupportedBulkColumn(
          `${getTableName(table)}.${column.name} (${type}) cannot be written through unnest`,
        );
      }
      return {
        key,
        column,
        alias: sql`${sql.identifier(column.name)}`,
        arrayType: sql.raw(`${typeName(column)}[]`),
      };
    });
  plans.set(table, plan);
  return plan;
}

/** An enum type quoted (and schema-qualified) as drizzle-kit creates it. */
function typeName(column: Column): string {
  if (!is(column, PgEnumColumn)) return column.getSQLType();
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const { schema, enumName } = column.enum;
  return schema ? `${quote(schema)}.${quote(enumName)}` : quote(enumName);
}

/**
 * `rows` as a SELECT of every insertable column of `table`, in order. A column that no row sets
 * takes its schema default, as drizzle's `.values()` would; rows come out in array order.
 */
export function unnestRows<T extends PgTable>(table: T, rows: readonly T["$inferInsert"][]): SQL {
  const selected: SQL[] = [];
  const arrays: SQL[] = [];
  const aliases: SQL[] = [];
  for (const { key, column, alias, arrayType } of planOf(table)) {
    const values = rows.map((row) => (row as Record<string, unknown>)[key]);
    if (column.hasDefault) {
      const unset = values.reduce<number>((n, value) => (value === undefined ? n + 1 : n), 0);
      if (unset > 0 && unset < rows.length) {
        throw new MixedDefaults(
          `${getTableName(table)}.${column.name}: ${unset} of ${rows.length} rows leave it to its default`,
        );
      }
      if (unset > 0) {
        selected.push(defaultOf(column));
        continue;
      }
    }
    selected.push(sql`u.${alias}`);
    arrays.push(arrayParameter(values, column, arrayType));
    aliases.push(alias);
  }
  return sql`select ${sql.join(selected, sql`, `)} from unnest(${sql.join(arrays, sql`, `)}) as u(${sql.join(aliases, sql`, `)})`;
}

/**
 * `values` of `column`'s type as one array parameter, e.g. for `= any(...)` or `unnest(...)`
 * where a list would otherwise take a parameter per value.
 */
export function columnArray(column: Column, values: readonly unknown[]): SQL {
  return arrayParameter(values, column, sql.raw(`${typeName(column)}[]`));
}

function arrayParameter(values: readonly unknown[], column: Column, arrayType: SQL): SQL {
  return sql`${sql.param(arrayLiteral(values, column))}::${arrayType}`;
}

function defaultOf(column: Column): SQL {
  const value = column.default;
  if (is(value, SQL)) return value;
  return sql`${sql.param(value, column)}::${sql.raw(typeName(column))}`;
}

/**
 * One column's values as a Postgres array literal: each element quoted (text keeps its spaces,
 * commas and braces), NULL bare. Values go through the column's own driver encoding first, so
 * uint256 bigints become exact decimal strings and timestamps ISO strings.
 */
function arrayLiteral(values: readonly unknown[], column: Column): string {
  let literal = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) literal += ",";
    const value = values[i];
    if (value === null || value === undefined) {
      literal += "NULL";
      continue;
    }
    const text = String(column.mapToDriverValue(value));
    // Most values (numbers, hashes, addresses) hold neither: looking is cheaper than replacing.
    const special = text.includes('"') || text.includes("\\");
    literal += `"${special ? text.replace(ARRAY_SPECIAL, "\\$&") : text}"`;
  }
  return `${literal}}`;
}

/** Inside a quoted array element only a double quote and a backslash need escaping. */
const ARRAY_SPECIAL = /["\\]/g;
