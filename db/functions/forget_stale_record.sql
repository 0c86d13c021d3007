-- A staked_citizens row whose columns change while its stored record does not (a fix by hand, a
-- test, an indexer from before the record) loses the record and its writer, so the API renders
-- the row's new columns instead of serving JSON written for the old ones. The projection writes
-- both with the columns; a record that happens to read the same for new columns (a citizen
-- re-staked by another wallet: the staker is not in the record) is lost too, which costs one
-- rendering per read until the next write, never a wrong answer.
CREATE OR REPLACE FUNCTION "forget_stale_record"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."record" IS NOT DISTINCT FROM OLD."record"
    AND NEW."record_writer" IS NOT DISTINCT FROM OLD."record_writer" THEN
    NEW."record" := NULL;
    NEW."record_writer" := NULL;
  END IF;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "staked_citizens_forget_stale_record"
  BEFORE UPDATE ON "staked_citizens"
  FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION "forget_stale_record"();
