/**
 * The staked-citizen projection: staked_citizens rebuilt from the event log and the reads stored
 * with each stake, for the citizens a write touched.
 */
import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { type StakedCitizen, stakedCitizens } from "../../db/schema.ts";

export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];

export interface CitizenKeyRow {
  season: number;
  citizenId: bigint;
}

/**
 * Where each column of staked_citizens comes from, in the rebuild below: `l` the live citizen
 * Stake event, `s` its citizen_stakes row (read at the stake's block), `c` the citizens row,
 * `d` the BYTES deposited into the stake since. Keyed by the table's own columns, so a column
 * added to the schema without a source here fails the type check; the column lists of the
 * insert and of its update are built from this one map.
 */
const SOURCES: Record<keyof StakedCitizen, SQL> = {
  season: sql`l.season`,
  citizenId: sql`l.citizen_id`,
  staker: sql`l.staker`,
  stakeBlockNumber: sql`l.block_number`,
  stakeLogIndex: sql`l.log_index`,
  identityId: sql`c.identity_id`,
  itemCacheId: sql`c.item_cache_id`,
  landDeedId: sql`c.land_deed_id`,
  name: sql`c.name`,
  image: sql`c.image`,
  isHand: sql`c.is_hand`,
  creditYield: sql`s.credit_yield`,
  identityPoints: sql`s.identity_points`,
  vaultId: sql`s.vault_id`,
  vaultCreditMultiplier: sql`s.vault_credit_multiplier`,
  vaultMultiplier: sql`s.vault_multiplier`,
  stakedVaultId: sql`s.staked_vault_id`,
  hasVault: sql`s.has_vault`,
  timelockDuration: sql`s.timelock_duration`,
  timelockMultiplier: sql`s.timelock_multiplier`,
  timelockEndTime: sql`s.timelock_end_time`,
  stakedBytes: sql`coalesce(d.staked, 0)`,
  bytesPoints: sql`coalesce(d.points, 0)`,
  totalPoints: sql`s.base_points + coalesce(d.points, 0)`,
};

const columns = getTableColumns(stakedCitizens);
const projected = Object.entries(SOURCES) as Array<[keyof StakedCitizen, SQL]>;
const insertColumns = sql.join(
  projected.map(([key]) => sql.identifier(columns[key].name)),
  sql`, `,
);
const selectedSources = sql.join(
  projected.map(([, source]) => source),
  sql`, `,
);
const updatedColumns = sql.join(
  projected
    // Everything but the conflict target, (season, citizen_id).
    .filter(([key]) => key !== "season" && key !== "citizenId")
    .map(([key]) => {
      const column = sql.identifier(columns[key].name);
      return sql`${column} = excluded.${column}`;
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
  await tx.execute(sql`
    with keys as (
      select distinct season, citizen_id
      from jsonb_to_recordset(${keysJson}::jsonb) as k(season smallint, citizen_id numeric)
    ),
    latest as (
      select distinct on (e.citizen_season, e.citizen_id)
        e.citizen_season as season, e.citizen_id, e.block_number, e.log_index, e.account as staker
      from staker_events e
      join keys k on k.season = e.citizen_season and k.citizen_id = e.citizen_id
      where e.event = 'Stake' and e.asset_type in ('s1_citizen', 's2_citizen')
        and e.block_number <= ${at}
      order by e.citizen_season, e.citizen_id, e.block_number desc, e.log_index desc
    ),
    live as (
      select l.* from latest l
      where not exists (
        select 1 from staker_events w
        where w.citizen_season = l.season and w.citizen_id = l.citizen_id
          and w.event = 'Withdraw' and w.asset_type in ('s1_citizen', 's2_citizen')
          and (w.block_number, w.log_index) > (l.block_number, l.log_index)
          and w.block_number <= ${at}
      )
    ),
    deposits as (
      select l.season, l.citizen_id,
        sum(b.amount_or_token_id) as staked,
        sum(div(b.amount_or_token_id * 100, 200000000000000000000)) as points
      from live l
      join staker_events b
        on b.citizen_season = l.season and b.citizen_id = l.citizen_id
        and b.event = 'Stake' and b.asset_type = 'bytes' and b.account = l.staker
        and (b.block_number, b.log_index) > (l.block_number, l.log_index)
        and b.block_number <= ${at}
      group by l.season, l.citizen_id
    ),
    unstaked as (
      delete from staked_citizens s using keys k
      where s.season = k.season and s.citizen_id = k.citizen_id
        and not exists (select 1 from live l where l.season = s.season and l.citizen_id = s.citizen_id)
    )
    insert into staked_citizens (${insertColumns})
    select ${selectedSources}
    from live l
    join citizen_stakes s on s.block_number = l.block_number and s.log_index = l.log_index
    join citizens c on c.season = l.season and c.citizen_id = l.citizen_id
    left join deposits d on d.season = l.season and d.citizen_id = l.citizen_id
    on conflict (season, citizen_id) do update set ${updatedColumns}
  `);
  if (manyKeys) await tx.execute(sql`set local enable_nestloop = on`);
}
