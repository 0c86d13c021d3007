-- The as-of functions' row estimates (ROWS 10) are in their files in db/functions/.
-- A table never analyzed is taken for at least 10 pages (850 rows of this one) until autovacuum
-- analyzes it, which a server with autovacuum off never does: every query joining the checkpoint
-- then multiplies by 850. Analyzed once, even empty, it is sized by its real pages, one per
-- ~85 checkpoint rows; it holds one row per staker.
ANALYZE "indexer_checkpoints";
