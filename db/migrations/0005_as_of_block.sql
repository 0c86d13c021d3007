ALTER TABLE "indexer_checkpoints" ADD COLUMN "finalized_block" bigint;--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."finalized_block" IS 'The finality boundary the follower last saw: blocks at or below it no longer change, so answers as of them can be cached for good.';--> statement-breakpoint
-- The one home of the staked-citizen rule. The citizens staked after block at_block, as
-- staked_citizens rows, from the event log and the reads stored with each stake: a citizen is
-- staked while its latest citizen Stake has no later Withdraw; its points are the stake's frozen
-- base plus the bonus of every BYTES deposit into it since. With a wallet, only that wallet's
-- citizens; with citizens (a JSON array of {season, citizen_id}), only those: the indexer
-- projects staked_citizens through this function, for the citizens a write touched. name and
-- image are today's metadata.
CREATE FUNCTION "staked_citizens_at"("at_block" bigint, "wallet" text DEFAULT NULL, "citizens" jsonb DEFAULT NULL)
RETURNS SETOF "staked_citizens" LANGUAGE sql STABLE AS $$
  with candidates as (
    select distinct k.season, k.citizen_id
    from jsonb_to_recordset(citizens) as k(season smallint, citizen_id numeric)
    where citizens is not null
    union
    select distinct e.citizen_season, e.citizen_id
    from staker_events e
    where citizens is null and e.event = 'Stake' and e.asset_type in ('s1_citizen', 's2_citizen')
      and e.block_number <= at_block
      and (wallet is null or e.account = lower(wallet))
  ),
  latest as (
    select distinct on (e.citizen_season, e.citizen_id)
      e.citizen_season as season, e.citizen_id, e.block_number, e.log_index, e.account as staker
    from staker_events e
    join candidates k on k.season = e.citizen_season and k.citizen_id = e.citizen_id
    where e.event = 'Stake' and e.asset_type in ('s1_citizen', 's2_citizen')
      and e.block_number <= at_block
    order by e.citizen_season, e.citizen_id, e.block_number desc, e.log_index desc
  ),
  live as (
    select l.* from latest l
    where (wallet is null or l.staker = lower(wallet))
      and not exists (
        select 1 from staker_events w
        where w.citizen_season = l.season and w.citizen_id = l.citizen_id
          and w.event = 'Withdraw' and w.asset_type in ('s1_citizen', 's2_citizen')
          and (w.block_number, w.log_index) > (l.block_number, l.log_index)
          and w.block_number <= at_block
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
      and b.block_number <= at_block
    group by l.season, l.citizen_id
  )
  select
    l.season, l.citizen_id, l.staker, l.block_number, l.log_index,
    c.identity_id, c.item_cache_id, c.land_deed_id, c.name, c.image, c.is_hand,
    s.credit_yield, s.identity_points, s.vault_id, s.vault_credit_multiplier, s.vault_multiplier,
    s.staked_vault_id, s.has_vault, s.timelock_duration, s.timelock_multiplier, s.timelock_end_time,
    coalesce(d.staked, 0), coalesce(d.points, 0), s.base_points + coalesce(d.points, 0)
  from live l
  join citizen_stakes s on s.block_number = l.block_number and s.log_index = l.log_index
  join citizens c on c.season = l.season and c.citizen_id = l.citizen_id
  left join deposits d on d.season = l.season and d.citizen_id = l.citizen_id
$$;--> statement-breakpoint
COMMENT ON FUNCTION "staked_citizens_at"(bigint, text, jsonb) IS 'The staked_citizens rows as they were after block at_block (any block from the start to the indexed block), for one wallet, some citizens, or all; the rule the indexer projects staked_citizens with.';
