CREATE TYPE "public"."configuration_source" AS ENUM('block', 'parent', 'trace', 'inferred');--> statement-breakpoint
ALTER TABLE "citizen_stakes" ADD COLUMN "configuration_source" "configuration_source";--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."configuration_source" IS 'S1: where credit_yield, identity_points and vault_multiplier were read: block (end of the stake''s block, or a later one showing the same stake), parent (end of the block before: reconfigured after the stake in its block), trace (the stake transaction''s prestate), inferred (none gives base_points: the end-of-block figures, marked inferred by the API).';--> statement-breakpoint
-- Rows written before this column were read at the end of the stake's block (or a later block
-- that showed the same figures). Those whose figures do not give their own base points were
-- reconfigured in the stake's block: they are inferred and listed by read-failures; a reindex of
-- their block reads them again from the block before, or a trace.
UPDATE "citizen_stakes" SET "configuration_source" = CASE
  WHEN div(coalesce("identity_points", 0) * coalesce("vault_multiplier", 0) * "timelock_multiplier", 10000) = "base_points"
    THEN 'block'::"configuration_source"
  ELSE 'inferred'::"configuration_source"
END
WHERE "season" = 1;
