-- A wallet's staked_citizens rows as they were after block at_block, without the block check of
-- staked_citizens_at: a plain SQL function, so Postgres inlines it into the statement that calls
-- it and plans one GiST lookup and two primary-key joins there, with a plan it can keep (a
-- PL/pgSQL call costs its block check, its plan settings and a tuplestore on every call: about
-- twice the Postgres time per answer, measured on the API's statements). The caller must keep
-- at_block at or below the indexed block, as the API does in the same statement; everyone else
-- reads staked_citizens_at, which checks. The states are found through the index's hash beside
-- the staker (the planner matches an index expression only as written; the staker's own
-- equality stays, so a collision costs a recheck, never a wrong row). ROWS 10: of the order of
-- one wallet's citizens, for the calls Postgres cannot inline.
CREATE OR REPLACE FUNCTION "staked_citizens_of_wallet_at"("at_block" bigint, "wallet" text)
RETURNS SETOF "staked_citizens" LANGUAGE sql STABLE ROWS 10 AS $$
  select r.*
  from staked_citizens_history h
  cross join lateral staked_citizen_row(h) r
  where hashtextextended(h.staker, 0) = hashtextextended(lower(wallet), 0)
    and h.staker = lower(wallet) and int8range(h.valid_from, h.valid_to) @> at_block
$$;--> statement-breakpoint
COMMENT ON FUNCTION "staked_citizens_of_wallet_at"(bigint, text) IS 'A wallet''s staked_citizens rows as they were after block at_block, unchecked: the caller keeps at_block at or below the indexed block (staked_citizens_at checks it).';
