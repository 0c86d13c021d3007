-- The read API caches responses per indexed block. Every API instance LISTENs on this channel, so
-- a moved checkpoint (forward, or back after a reorg) reaches all of them when its transaction
-- commits, with no change to the indexer. The payload is the new indexed block.
CREATE OR REPLACE FUNCTION "notify_indexed_block"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('indexed_block', NEW."indexed_block"::text);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "indexer_checkpoints_notify_insert"
  AFTER INSERT ON "indexer_checkpoints"
  FOR EACH ROW EXECUTE FUNCTION "notify_indexed_block"();--> statement-breakpoint
CREATE OR REPLACE TRIGGER "indexer_checkpoints_notify_update"
  AFTER UPDATE OF "indexed_block" ON "indexer_checkpoints"
  FOR EACH ROW WHEN (OLD."indexed_block" IS DISTINCT FROM NEW."indexed_block")
  EXECUTE FUNCTION "notify_indexed_block"();--> statement-breakpoint
COMMENT ON FUNCTION "notify_indexed_block"() IS 'NOTIFY indexed_block with the new block whenever a checkpoint moves; the API''s response caches listen.';
