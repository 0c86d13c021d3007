-- GiST over (staker, block range) for a wallet's rows as of a block; trusted since Postgres 13, so
-- the database's owner may create it. Its own schema keeps its ~200 functions out of the tables'
-- (index definitions find its operator classes by type, not by search path).
CREATE SCHEMA IF NOT EXISTS "extensions";--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA "extensions";--> statement-breakpoint
CREATE TABLE "staked_citizens_history" (
	"season" smallint NOT NULL,
	"citizen_id" numeric(78, 0) NOT NULL,
	"valid_from" bigint NOT NULL,
	"valid_to" bigint,
	"staker" text NOT NULL,
	"stake_block_number" bigint NOT NULL,
	"stake_log_index" integer NOT NULL,
	"staked_bytes" numeric(78, 0) NOT NULL,
	"bytes_points" numeric(78, 0) NOT NULL,
	CONSTRAINT "staked_citizens_history_season_citizen_id_valid_from_pk" PRIMARY KEY("season","citizen_id","valid_from"),
	CONSTRAINT "staked_citizens_history_range_check" CHECK ("staked_citizens_history"."valid_to" > "staked_citizens_history"."valid_from")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "staked_citizens_history_open_idx" ON "staked_citizens_history" USING btree ("season","citizen_id") WHERE "staked_citizens_history"."valid_to" is null;--> statement-breakpoint
CREATE INDEX "staked_citizens_history_staker_idx" ON "staked_citizens_history" USING gist ("staker",int8range("valid_from", "valid_to"));--> statement-breakpoint
COMMENT ON TABLE "staked_citizens_history" IS 'Every staked state each citizen has been in, as a range of blocks: a row holds for blocks valid_from <= N < valid_to. Read it through staked_citizens_at.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."season" IS 'Citizen season: 1 or 2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."citizen_id" IS 'Citizen token id.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."valid_from" IS 'The block whose events put the citizen in this state (the row holds as of this block).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."valid_to" IS 'The block whose events ended this state (the row no longer holds as of it); null while it holds.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."staker" IS 'Wallet that staked the citizen (lowercase).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."stake_block_number" IS 'Block of the Stake this state belongs to (citizen_stakes holds what it applied).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."stake_log_index" IS 'Log index of that Stake.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."staked_bytes" IS 'BYTES the staker deposited into the citizen since the stake, wei.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens_history"."bytes_points" IS 'Raw points those deposits added (amount * 100 / 200e18 each, rounded down).';--> statement-breakpoint
-- The one home of the staked-citizen rule: extends staked_citizens_history over the blocks
-- (after_block, to_block] from the events in them and each citizen's state at after_block. A
-- citizen is staked while its latest citizen Stake has no later Withdraw; its points are the
-- stake's frozen base plus the bonus of every BYTES deposit its staker made into it since. Each
-- block with events of a citizen ends its previous state and starts the one after the block's
-- last event. It reads only the range's events and one row per citizen they touch, so its cost
-- is the range's, never the history's. The caller keeps the precondition: no state of these
-- citizens starts after after_block (a rollback truncates first).
CREATE FUNCTION "project_staked_citizens"("after_block" bigint, "to_block" bigint)
RETURNS void LANGUAGE sql AS $$
  update staked_citizens_history h set valid_to = f.first_block
  from (
    select citizen_season as season, citizen_id, min(block_number) as first_block
    from staker_events
    where block_number > after_block and block_number <= to_block and citizen_id is not null
    group by citizen_season, citizen_id
  ) f
  where h.season = f.season and h.citizen_id = f.citizen_id and h.valid_to is null;

  with events as (
    select e.citizen_season as season, e.citizen_id, e.block_number, e.log_index, e.account,
      e.amount_or_token_id as amount,
      e.event = 'Stake' and e.asset_type in ('s1_citizen', 's2_citizen') as citizen_stake,
      e.event = 'Withdraw' and e.asset_type in ('s1_citizen', 's2_citizen') as citizen_withdraw,
      e.event = 'Stake' and e.asset_type = 'bytes' as bytes_stake
    from staker_events e
    where e.block_number > after_block and e.block_number <= to_block and e.citizen_id is not null
  ),
  -- Stake group 0 is the stake held at after_block (if any); each citizen Stake starts the next.
  grouped as (
    select ev.*, count(*) filter (where citizen_stake) over (
      partition by season, citizen_id order by block_number, log_index) as stake_group
    from events ev
  ),
  held as (
    select g.*,
      case when g.stake_group = 0 then p.staker
        else first_value(g.account) over running end as staker,
      case when g.stake_group = 0 then p.stake_block_number
        else first_value(g.block_number) over running end as stake_block_number,
      case when g.stake_group = 0 then p.stake_log_index
        else first_value(g.log_index) over running end as stake_log_index,
      case when g.stake_group = 0 then p.staked_bytes else 0 end as bytes_before,
      case when g.stake_group = 0 then p.bytes_points else 0 end as points_before,
      bool_or(g.citizen_withdraw) over running as withdrawn
    from grouped g
    left join lateral (
      select h.* from staked_citizens_history h
      where h.season = g.season and h.citizen_id = g.citizen_id and h.valid_from <= after_block
      order by h.valid_from desc limit 1
    ) p on p.valid_to > after_block
    window running as (
      partition by g.season, g.citizen_id, g.stake_group order by g.block_number, g.log_index)
  ),
  states as (
    select h.season, h.citizen_id, h.block_number, h.staker, h.stake_block_number,
      h.stake_log_index, h.withdrawn,
      h.bytes_before + coalesce(sum(h.amount) filter (
        where h.bytes_stake and h.account = h.staker) over running, 0) as staked_bytes,
      h.points_before + coalesce(sum(div(h.amount * 100, 200000000000000000000)) filter (
        where h.bytes_stake and h.account = h.staker) over running, 0) as bytes_points,
      row_number() over (
        partition by h.season, h.citizen_id, h.block_number order by h.log_index desc) as from_last
    from held h
    window running as (
      partition by h.season, h.citizen_id, h.stake_group order by h.block_number, h.log_index)
  ),
  after_blocks as (
    select s.*, lead(s.block_number) over (
      partition by s.season, s.citizen_id order by s.block_number) as next_block
    from states s where s.from_last = 1
  )
  insert into staked_citizens_history (season, citizen_id, valid_from, valid_to, staker,
    stake_block_number, stake_log_index, staked_bytes, bytes_points)
  select season, citizen_id, block_number, next_block, staker, stake_block_number,
    stake_log_index, staked_bytes, bytes_points
  from after_blocks
  where staker is not null and not withdrawn;
$$;--> statement-breakpoint
COMMENT ON FUNCTION "project_staked_citizens"(bigint, bigint) IS 'The staked-citizen rule: extends staked_citizens_history over blocks (after_block, to_block] from their events. The indexer calls it; analysts read staked_citizens_at.';--> statement-breakpoint
-- staked_citizens_at read staked_citizens_history from here on; what it is now is
-- db/functions/staked_citizens_at.sql (a later migration creates it from that file).
-- A BYTES amount in wei as BYTES, exact and without trailing zeros (2.5, not 2.500000000000000000).
CREATE FUNCTION "bytes_amount"("wei" numeric) RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN trim_scale("wei" * 0.000000000000000001);--> statement-breakpoint
COMMENT ON FUNCTION "bytes_amount"(numeric) IS 'A BYTES amount in wei (staked_bytes, amount_or_token_id of a BYTES event) as BYTES: exact, no trailing zeros.';--> statement-breakpoint
-- An upgraded database gets its history from the rows it holds, up to its indexed block.
SELECT "project_staked_citizens"(-1, "indexed_block") FROM "indexer_checkpoints";
