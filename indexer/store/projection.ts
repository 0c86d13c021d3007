/**
 * The staked-citizen projection: staked_citizens rebuilt from the event log and the reads stored
 * with each stake, for the citizens a write touched.
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

/** Above this many citizens, a rebuild is planned without nested loops (see recompute). */
const NESTED_LOOP_KEY_LIMIT = 200;

/**
 * Rebuilds staked_citizens for `keys` from the event log as of block `at`: a citizen is staked
 * while its latest citizen Stake has no later Withdraw; its points are the stake's frozen base
 * plus the bonus of every BYTES deposit into that stake.
 */
export async function recompute(tx: Transaction, keys: CitizenKeyRow[], at: bigint) {
  if (keys.length === 0) return;
  const keysJson = JSON.stringify(
    keys.map((key) => ({ season: key.season, citizen_id: key.citizenId.toString() })),
  );
  // Postgres guesses 100 keys and a 1-row live set, picks nested loops and turns a backfill
  // chunk touching thousands of citizens quadratic (2.6 s instead of 0.24 s for 1,663). For a
  // few keys (following the head) the nested loops over the indexes are the right plan.
  const manyKeys = keys.length > NESTED_LOOP_KEY_LIMIT;
  if (manyKeys) await tx.execute(sql`set local enable_nestloop = off`);
  // The rule itself is the SQL function staked_citizens_at (migration 0005), the same the
  // API answers as-of-block questions with: here for the touched citizens at block `at`.
  await tx.execute(sql`
    with keys as (
      select distinct season, citizen_id
      from jsonb_to_recordset(${keysJson}::jsonb) as k(season smallint, citizen_id numeric)
    ),
    fresh as (
      select * from staked_citizens_at(${at}::bigint, null::text, ${keysJson}::jsonb)
    ),
    unstaked as (
      delete from staked_citizens s using keys k
      where s.season = k.season and s.citizen_id = k.citizen_id
        and not exists (
          select 1 from fresh f where f.season = s.season and f.citizen_id = s.citizen_id
        )
    )
    insert into staked_citizens select * from fresh
    on conflict (season, citizen_id) do update set ${updatedColumns}
  `);
  if (manyKeys) await tx.execute(sql`set local enable_nestloop = on`);
}
