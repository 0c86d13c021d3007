DROP INDEX "staked_citizens_history_staker_idx";--> statement-breakpoint
CREATE INDEX "staked_citizens_history_staker_hash_idx" ON "staked_citizens_history" USING gist (hashtextextended("staker", 0),int8range("valid_from", "valid_to"));--> statement-breakpoint
-- A wallet's rows are found through the index's hash beside the staker (the planner matches an
-- index expression only as written; the staker's own equality stays, so a collision costs a
-- recheck, never a wrong row). staked_citizens_at hands a wallet's rows to this function
-- (0011), so both the API and analysts use the index; everything else is 0011's unchanged.
CREATE OR REPLACE FUNCTION "staked_citizens_of_wallet_at"("at_block" bigint, "wallet" text)
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
  where hashtextextended(h.staker, 0) = hashtextextended(lower(wallet), 0)
    and h.staker = lower(wallet) and int8range(h.valid_from, h.valid_to) @> at_block
$$;--> statement-breakpoint
