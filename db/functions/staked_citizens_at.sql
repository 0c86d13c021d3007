-- The staked_citizens rows as they were after block at_block, read from staked_citizens_history
-- (one index lookup per citizen, or a GiST lookup for a wallet) through staked_citizen_row. With
-- a wallet, only that wallet's citizens (staked_citizens_of_wallet_at, the API's own rule); with
-- citizens (a JSON array of {season, citizen_id}), only those (staked_citizens_listed_at): the
-- indexer projects staked_citizens this way, for the citizens a write touched. A block beyond the
-- indexed block is refused (the tables do not know it yet): an error rather than today's rows.
-- ROWS 10: of the order of one wallet's citizens, the call an analyst repeats over a
-- generate_series (1000, the default, made such queries plan for millions of rows and compile
-- with JIT).
CREATE OR REPLACE FUNCTION "staked_citizens_at"("at_block" bigint, "wallet" text DEFAULT NULL, "citizens" jsonb DEFAULT NULL)
RETURNS SETOF "staked_citizens" LANGUAGE plpgsql STABLE ROWS 10
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
    select r.* from staked_citizens_listed_at(at_block, citizens) r
    where citizens is not null and (wallet is null or r.staker = lower(wallet))
    union all
    select r.* from staked_citizens_history h
    cross join lateral staked_citizen_row(h) r
    where citizens is null
      and h.valid_from <= at_block and (h.valid_to is null or h.valid_to > at_block);
end
$$;--> statement-breakpoint
COMMENT ON FUNCTION "staked_citizens_at"(bigint, text, jsonb) IS 'The staked_citizens rows as they were after block at_block (from the first staker event to the indexed block; a later block is an error naming the indexed block), for one wallet, some citizens, or all.';
