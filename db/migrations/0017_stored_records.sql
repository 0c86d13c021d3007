ALTER TABLE "staked_citizens" ADD COLUMN "record" text;--> statement-breakpoint
ALTER TABLE "staked_citizens" ADD COLUMN "record_writer" text;--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."record" IS 'The API record of this row as JSON text (no image template applied), written with the row by the indexer''s projection; null where the row was changed otherwise, and the API then renders the row.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."record_writer" IS 'Which version of the API''s record writer wrote record: the API serves a stored record only from its own writer.';
