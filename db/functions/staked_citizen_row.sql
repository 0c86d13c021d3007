-- The one definition of a staked_citizens row: a state from staked_citizens_history joined to
-- what its stake froze (citizen_stakes) and the citizen's own columns (citizens; name and image
-- are today's metadata). staked_citizens_at, staked_citizens_of_wallet_at and, through them, the
-- projection of staked_citizens all select their rows from it, so a new column is one line here
-- (and the column in db/schema.ts). A set-returning SQL function called in FROM: Postgres
-- inlines it, so each caller still plans two primary-key lookups per state.
CREATE OR REPLACE FUNCTION "staked_citizen_row"("h" "staked_citizens_history")
RETURNS SETOF "staked_citizens" LANGUAGE sql STABLE ROWS 1 AS $$
  select
    h.season, h.citizen_id, h.staker, h.stake_block_number, h.stake_log_index,
    c.identity_id, c.item_cache_id, c.land_deed_id, c.name, c.image, c.is_hand,
    s.credit_yield, s.identity_points, s.vault_id, s.vault_credit_multiplier, s.vault_multiplier,
    s.staked_vault_id, s.has_vault, s.timelock_duration, s.timelock_multiplier,
    s.timelock_end_time, h.staked_bytes, h.bytes_points,
    (s.base_points + h.bytes_points)::numeric(78, 0), s.hand_claim_source,
    -- record, record_writer: the API's JSON, which only the indexer's projection writes.
    null::text, null::text
  from citizen_stakes s
  join citizens c on c.season = h.season and c.citizen_id = h.citizen_id
  where s.block_number = h.stake_block_number and s.log_index = h.stake_log_index
$$;--> statement-breakpoint
COMMENT ON FUNCTION "staked_citizen_row"("staked_citizens_history") IS 'The staked_citizens row of one staked_citizens_history state: its stake''s frozen reads and the citizen''s columns joined on. The as-of functions select their rows from it.';
