/**
 * The staked-citizen projection: the history of every citizen's staked states extended over the
 * blocks a write adds (the rule, in the SQL function project_staked_citizens), and
 * staked_citizens rewritten from it for the citizens the write touched, each row with the API's
 * record of it.
 */
import { getTableColumns, sql } from "drizzle-orm";
import { storedRecord } from "../../api/modules/citizens/record.ts";
import type { Raw } from "../../api/raw-statement.ts";
import type { Database } from "../../db/client.ts";
import { type StakedCitizen, stakedCitizens } from "../../db/schema.ts";

export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];

export interface CitizenKeyRow {
  season: number;
  citizenId: bigint;
}

const columns = Object.values(getTableColumns(stakedCitizens));
/** Everything but the conflict target, (season, citizen_id), from the drizzle table. */
const updatedColumns = sql.join(
  columns
    .filter((column) => column.name !== "season" && column.name !== "citizen_id")
    .map((column) => {
      const name = sql.identifier(column.name);
      return sql`${name} = excluded.${name}`;
    }),
  sql`, `,
);

/**
 * Extends staked_citizens_history over blocks (after, to] from their events
 * (db/functions/project_staked_citizens.sql): its cost is the range's events, never the history before it. No state may start above
 * `after` (truncate first when rewriting).
 */
export async function projectHistory(tx: Transaction, after: bigint, to: bigint) {
  if (to <= after) return;
  await tx.execute(projectHistoryStatement(after, to));
}

/** projectHistory's statement, for a flight of statements (`to` above `after`). */
export function projectHistoryStatement(after: bigint, to: bigint) {
  return sql`select project_staked_citizens(${after}::bigint, ${to}::bigint)`;
}

/**
 * Forgets the history above block `after`: states that started later go, and the state that held
 * at `after` is open again. Only citizens with a stored event above `after` can have either, so
 * call it before those events are deleted.
 */
export async function truncateHistory(tx: Transaction, after: bigint) {
  const touched = sql`(
    select distinct citizen_season, citizen_id from staker_events
    where block_number > ${after}::bigint and citizen_id is not null)`;
  // Deleted first: the state reopened below would otherwise meet a later open one in the
  // one-open-state-per-citizen index.
  await tx.execute(sql`
    delete from staked_citizens_history h
    where (h.season, h.citizen_id) in ${touched} and h.valid_from > ${after}::bigint`);
  await tx.execute(sql`
    update staked_citizens_history h set valid_to = null
    where (h.season, h.citizen_id) in ${touched} and h.valid_to > ${after}::bigint`);
}

/**
 * Rewrites staked_citizens for `keys` as staked_citizens_at says they are after block `at`,
 * which must already be the checkpoint (the function refuses blocks beyond it), each row with its
 * API record (api/modules/citizens/record.ts), so a read serves the record as stored: the rows
 * are read, their records written here, and the rows written back with them.
 */
export async function recompute(tx: Transaction, keys: CitizenKeyRow[], at: bigint) {
  if (keys.length === 0) return;
  await tx.execute(recomputeWriteStatement(keys, await recordedRows(tx, keys, at)));
}

/** The rows of `keys` after block `at` (staked_citizens_at), each with its record. */
export async function recordedRows(tx: Transaction, keys: CitizenKeyRow[], at: bigint) {
  return withRecords(
    await tx.execute<Record<string, unknown>>(
      sql`select * from staked_citizens_at(${at}::bigint, null::text, ${keysJson(keys)}::jsonb)`,
    ),
  );
}

/**
 * recordedRows's read for the citizens with events in blocks (after, to], at `to`, its keys
 * found by the statement itself (touchedKeys): it needs no answer before it, so it goes in the
 * flight that moves the checkpoint to `to`, after the move (staked_citizens_at refuses a block
 * beyond the checkpoint). Its rows take their records with withRecords.
 */
export function touchedRowsStatement(after: bigint, to: bigint) {
  return sql`select * from staked_citizens_at(${to}::bigint, null::text, (
    select coalesce(jsonb_agg(jsonb_build_object('season', k.citizen_season, 'citizen_id', k.citizen_id)), '[]')
    from (${touchedKeys(after, to)}) k))`;
}

/** The citizens with events in blocks (after, to]: the keys a move of the checkpoint touches. */
export function touchedKeys(after: bigint, to: bigint) {
  return sql`select distinct citizen_season, citizen_id from staker_events
    where block_number > ${after}::bigint and block_number <= ${to}::bigint
      and citizen_id is not null`;
}

/** Rows of staked_citizens_at (columns by name, the driver's values), each with its record. */
export function withRecords(fresh: Record<string, unknown>[]) {
  return fresh.map((columns) => {
    const row = Object.fromEntries(fieldNames.map(([key, name]) => [key, columns[name]]));
    const { record, recordWriter } = storedRecord(row as Raw<StakedCitizen>);
    return { ...columns, record, record_writer: recordWriter };
  });
}

const keysJson = (keys: CitizenKeyRow[]) =>
  JSON.stringify(keys.map((key) => ({ season: key.season, citizen_id: key.citizenId.toString() })));

/** Each column's drizzle key and name: the record writer reads rows by key. */
const fieldNames = Object.entries(getTableColumns(stakedCitizens)).map(
  ([key, column]) => [key, column.name] as const,
);

/**
 * recompute's write of `rows` (recordedRows) for `keys`. The keys no longer staked are a set
 * difference (hashed, or sorted when large), never a join against the rows: Postgres costs those
 * at a function's row estimate whatever the call returns, and with a small one planned that join
 * as a loop, each touched citizen scanning all the rows (2,000 citizens: 1.9 million
 * comparisons, 2.4-5 s). The rows come back as JSON with the driver's values (numerics as their
 * digits), read into the table's own row type.
 */
export function recomputeWriteStatement(keys: CitizenKeyRow[], rows: object[]) {
  return sql`
    with keys as (
      select distinct season, citizen_id
      from jsonb_to_recordset(${keysJson(keys)}::jsonb) as k(season smallint, citizen_id numeric)
    ),
    fresh as (
      select * from jsonb_populate_recordset(null::staked_citizens, ${JSON.stringify(rows)}::jsonb)
    ),
    unstaked as (
      delete from staked_citizens s
      where (s.season, s.citizen_id) in (
        select season, citizen_id from keys except select season, citizen_id from fresh
      )
    )
    insert into staked_citizens select * from fresh
    on conflict (season, citizen_id) do update set ${updatedColumns}
  `;
}
