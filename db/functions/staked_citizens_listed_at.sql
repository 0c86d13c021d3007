-- Listed citizens' staked_citizens rows as they were after block at_block (citizens: a JSON array
-- of {season, citizen_id}), each its latest state at or before the block, unchecked:
-- staked_citizens_at checks the block and reads the listed citizens here. One index lookup and two
-- primary-key joins per citizen, and never a scan: a function of its own so that its plan is made
-- at each call, with no sequential scan. Kept in staked_citizens_at's plan, a session used the
-- plan of its first call until the tables were next analyzed, and one made while citizen_stakes
-- was nearly empty joined each state to a scan of all of it: the indexer's projection reads the
-- citizens each write touched this way, and a backfill's writes grew with every chunk (10 of 20 s
-- over the 20k bench chain). Its SET clauses keep Postgres from inlining it; no JIT, which the
-- cost of a scan it could not avoid would switch on. ROWS 100: what a write touches.
CREATE OR REPLACE FUNCTION "staked_citizens_listed_at"("at_block" bigint, "citizens" jsonb)
RETURNS SETOF "staked_citizens" LANGUAGE sql STABLE ROWS 100
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
  select r.* from (
    select distinct k.season, k.citizen_id
    from jsonb_to_recordset(citizens) as k(season smallint, citizen_id numeric)
  ) k
  cross join lateral (
    select v from staked_citizens_history v
    where v.season = k.season and v.citizen_id = k.citizen_id and v.valid_from <= at_block
    order by v.valid_from desc limit 1
  ) latest
  cross join lateral staked_citizen_row(latest.v) r
  where (latest.v).valid_to is null or (latest.v).valid_to > at_block
$$;--> statement-breakpoint
COMMENT ON FUNCTION "staked_citizens_listed_at"(bigint, jsonb) IS 'Listed citizens'' staked_citizens rows as they were after block at_block, unchecked: the caller keeps at_block at or below the indexed block (staked_citizens_at checks it).';
