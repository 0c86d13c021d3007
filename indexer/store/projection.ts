/**
 * The staked-citizen projection: the history of every citizen's staked states extended over the
 * blocks a write adds (the rule, in the SQL function project_staked_citizens), and
 * staked_citizens rewritten from it for the citizens the write touched.
 */
import { getTableColumns, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { stakedCitizens } from "../../db/schema.ts";

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
 * which must already be the checkpoint (the function refuses blocks beyond it).
 */
export async function recompute(tx: Transaction, keys: CitizenKeyRow[], at: bigint) {
  if (keys.length === 0) return;
  await tx.execute(recomputeStatement(keys, at));
}

/**
 * recompute's one statement. The keys no longer staked are a set difference (hashed, or sorted
 * when large), never a join against the function's rows: Postgres costs those at the function's
 * row estimate whatever the call returns, and with a small one planned that join as a loop, each
 * touched citizen scanning all the rows (2,000 citizens: 1.9 million comparisons, 2.4-5 s).
 */
export function recomputeStatement(keys: CitizenKeyRow[], at: bigint) {
  const keysJson = JSON.stringify(
    keys.map((key) => ({ season: key.season, citizen_id: key.citizenId.toString() })),
  );
  return sql`
    with keys as (
      select distinct season, citizen_id
      from jsonb_to_recordset(${keysJson}::jsonb) as k(season smallint, citizen_id numeric)
    ),
    fresh as (
      select * from staked_citizens_at(${at}::bigint, null::text, ${keysJson}::jsonb)
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
