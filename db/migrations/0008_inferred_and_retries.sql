ALTER TABLE "read_failures" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "read_failures" ADD COLUMN "retry_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "staked_citizens" ADD COLUMN "hand_claim_source" "hand_claim_source";--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."hand_claim_source" IS 'S1 only: where the stake''s Hand flag was learned (citizen_stakes.hand_claim_source); inferred means vault_multiplier assumes no claim because the node had no trace API.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."attempts" IS 'Reads again that failed too since the failure was recorded.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."retry_at" IS 'When the metadata refresher reads it again; later after each failed attempt.';--> statement-breakpoint
-- The projection (migration 0005) also carries where each stake's Hand flag came from, so the
-- API can say which values are inferred; unchanged otherwise.
CREATE OR REPLACE FUNCTION "staked_citizens_at"("at_block" bigint, "wallet" text DEFAULT NULL, "citizens" jsonb DEFAULT NULL)
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
    coalesce(d.staked, 0), coalesce(d.points, 0), s.base_points + coalesce(d.points, 0),
    s.hand_claim_source
  from live l
  join citizen_stakes s on s.block_number = l.block_number and s.log_index = l.log_index
  join citizens c on c.season = l.season and c.citizen_id = l.citizen_id
  left join deposits d on d.season = l.season and d.citizen_id = l.citizen_id
$$;--> statement-breakpoint
UPDATE "staked_citizens" c SET "hand_claim_source" = s."hand_claim_source"
FROM "citizen_stakes" s
WHERE s."block_number" = c."stake_block_number" AND s."log_index" = c."stake_log_index";
