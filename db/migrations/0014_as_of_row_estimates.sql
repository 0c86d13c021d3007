-- Row estimates the planner can use. A set-returning function that Postgres cannot inline is
-- costed at ROWS rows a call (1000 by default), and an analyst's query multiplies them: the
-- README's "a wallet's points at five blocks" calls staked_citizens_at once per block of a
-- generate_series (1000 rows to the planner) and was planned at 21 million for 5 rows, so
-- Postgres compiled it with JIT (0.2-0.8 s of a 1 ms answer, past jit_inline_above_cost).
-- Ten is of the order of one wallet's citizens (the demo's wallets hold 5.4 on average, 10 at
-- most), the call that repeats; a call for all citizens is underestimated, which costs nothing
-- where it is called once (its joins still hash, checked on a 2,000-citizen history). COST
-- stays the default: 1 to 100 changed no plan of the README's queries. The wallet function is
-- inlined where it is called from FROM (its estimate is then the planner's own); the figure
-- holds where it is not.
ALTER FUNCTION "staked_citizens_at"(bigint, text, jsonb) ROWS 10;--> statement-breakpoint
ALTER FUNCTION "staked_citizens_of_wallet_at"(bigint, text) ROWS 10;--> statement-breakpoint
-- A table never analyzed is taken for at least 10 pages (850 rows of this one) until autovacuum
-- analyzes it, which a server with autovacuum off never does: every query joining the checkpoint
-- then multiplies by 850. Analyzed once, even empty, it is sized by its real pages, one per
-- ~85 checkpoint rows; it holds one row per staker.
ANALYZE "indexer_checkpoints";
