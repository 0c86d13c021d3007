-- A rebuild of already-indexed blocks (reindex) rewrites staked_citizens without moving the
-- checkpoint; the same notification then still reaches the caches, once per statement.
CREATE OR REPLACE FUNCTION "notify_staked_citizens_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('indexed_block', coalesce((SELECT max("indexed_block") FROM "indexer_checkpoints"), 0)::text);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "staked_citizens_notify"
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "staked_citizens"
  FOR EACH STATEMENT EXECUTE FUNCTION "notify_staked_citizens_changed"();
