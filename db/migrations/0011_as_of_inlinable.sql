-- A wallet's staked_citizens rows as they were after block at_block, without the block check of
-- staked_citizens_at: a plain SQL function, so Postgres inlines it into the statement that calls
-- it and plans one GiST lookup and two primary-key joins there, with a plan it can keep (a
-- PL/pgSQL call costs its block check, its plan settings and a tuplestore on every call: about
-- twice the Postgres time per answer, measured on the API's statements). The caller must keep
-- at_block at or below the indexed block, as the API does in the same statement;
-- everyone else reads staked_citizens_at, which checks.
CREATE FUNCTION "staked_citizens_of_wallet_at"("at_block" bigint, "wallet" text)
RETURNS SETOF "staked_citizens" LANGUAGE sql STABLE AS $$
  select
    h.season, h.citizen_id, h.staker, h.stake_block_number, h.stake_log_index,
    c.identity_id, c.item_cache_id, c.land_deed_id, c.name, c.image, c.is_hand,
    s.credit_yield, s.identity_points, s.vault_id, s.vault_credit_multiplier, s.vault_multiplier,
    s.staked_vault_id, s.has_vault, s.timelock_duration, s.timelock_multiplier,
    s.timelock_end_time, h.staked_bytes, h.bytes_points,
    (s.base_points + h.bytes_points)::numeric(78, 0), s.hand_claim_source
  from staked_citizens_history h
  join citizen_stakes s on s.block_number = h.stake_block_number and s.log_index = h.stake_log_index
  join citizens c on c.season = h.season and c.citizen_id = h.citizen_id
  where h.staker = lower(wallet) and int8range(h.valid_from, h.valid_to) @> at_block
$$;--> statement-breakpoint
COMMENT ON FUNCTION "staked_citizens_of_wallet_at"(bigint, text) IS 'A wallet''s staked_citizens rows as they were after block at_block, unchecked: the caller keeps at_block at or below the indexed block (staked_citizens_at checks it).';--> statement-breakpoint
-- As in 0010, but one wallet's rows come from staked_citizens_of_wallet_at, so a wallet has one
-- rule of which rows hold and what a row says, whether the API or an analyst asks. Some
-- citizens (each its latest state at or before the block, one backward index step) and all
-- citizens keep their own lookups, with the same columns.
CREATE OR REPLACE FUNCTION "staked_citizens_at"("at_block" bigint, "wallet" text DEFAULT NULL, "citizens" jsonb DEFAULT NULL)
RETURNS SETOF "staked_citizens" LANGUAGE plpgsql STABLE
-- Custom plans would re-plan the query below on every call (its generic plan costs both
-- branches, so Postgres would never pick it); generic, the branch not asked for is skipped by its
-- one-time filter. Every state found is joined to its stake and its citizen by primary key: the
-- generic plan cannot know how few states a call finds and would hash whole tables.
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
  if citizens is null and wallet is not null then
    return query select * from staked_citizens_of_wallet_at(at_block, wallet);
    return;
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
      where citizens is null
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
