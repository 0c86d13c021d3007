DROP INDEX "staked_citizens_history_staker_idx";--> statement-breakpoint
CREATE INDEX "staked_citizens_history_staker_hash_idx" ON "staked_citizens_history" USING gist (hashtextextended("staker", 0),int8range("valid_from", "valid_to"));--> statement-breakpoint
-- The wallet branch names the index's hash beside the staker (the planner matches an index
-- expression only as written); everything else is 0010's function unchanged.
CREATE OR REPLACE FUNCTION "staked_citizens_at"("at_block" bigint, "wallet" text DEFAULT NULL, "citizens" jsonb DEFAULT NULL)
RETURNS SETOF "staked_citizens" LANGUAGE plpgsql STABLE
-- Custom plans would re-plan the query below on every call (its generic plan costs all three
-- branches, so Postgres would never pick it); generic, the branches not asked for are skipped by
-- their one-time filters. Every state found is joined to its stake and its citizen by primary
-- key: the generic plan cannot know how few states a call finds and would hash whole tables.
SET plan_cache_mode = force_generic_plan SET enable_hashjoin = off SET enable_mergejoin = off AS $$
declare
  indexed bigint;
begin
  if at_block is null then
    return;
  end if;
  select max(indexed_block) into indexed from indexer_checkpoints;
  if indexed is null or at_block > indexed then
    raise exception 'block % is beyond the indexed block %', at_block, coalesce(indexed::text, '(none yet)')
      using errcode = 'CS416', hint = 'ask for a block at or below indexer_checkpoints.indexed_block';
  end if;
  return query
    with versions as (
      select h.* from (
        select distinct k.season, k.citizen_id
        from jsonb_to_recordset(citizens) as k(season smallint, citizen_id numeric)
      ) k
      cross join lateral (
        select v.* from staked_citizens_history v
        where v.season = k.season and v.citizen_id = k.citizen_id and v.valid_from <= at_block
        order by v.valid_from desc limit 1
      ) h
      where citizens is not null and (h.valid_to is null or h.valid_to > at_block)
        and (wallet is null or h.staker = lower(wallet))
      union all
      select h.* from staked_citizens_history h
      where citizens is null and wallet is not null
        and hashtextextended(h.staker, 0) = hashtextextended(lower(wallet), 0)
        and h.staker = lower(wallet) and int8range(h.valid_from, h.valid_to) @> at_block
      union all
      select h.* from staked_citizens_history h
      where citizens is null and wallet is null
        and h.valid_from <= at_block and (h.valid_to is null or h.valid_to > at_block)
    )
    select
      h.season, h.citizen_id, h.staker, h.stake_block_number, h.stake_log_index,
      c.identity_id, c.item_cache_id, c.land_deed_id, c.name, c.image, c.is_hand,
      s.credit_yield, s.identity_points, s.vault_id, s.vault_credit_multiplier, s.vault_multiplier,
      s.staked_vault_id, s.has_vault, s.timelock_duration, s.timelock_multiplier,
      s.timelock_end_time, h.staked_bytes, h.bytes_points,
      (s.base_points + h.bytes_points)::numeric(78, 0), s.hand_claim_source
    from versions h
    join citizen_stakes s on s.block_number = h.stake_block_number and s.log_index = h.stake_log_index
    join citizens c on c.season = h.season and c.citizen_id = h.citizen_id;
end
$$;
