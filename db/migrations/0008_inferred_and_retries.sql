ALTER TABLE "read_failures" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "read_failures" ADD COLUMN "retry_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "staked_citizens" ADD COLUMN "hand_claim_source" "hand_claim_source";--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."hand_claim_source" IS 'S1 only: where the stake''s Hand flag was learned (citizen_stakes.hand_claim_source); inferred means vault_multiplier assumes no claim because the node had no trace API.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."attempts" IS 'Reads again that failed too since the failure was recorded.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."retry_at" IS 'When the metadata refresher reads it again; later after each failed attempt.';--> statement-breakpoint
-- staked_citizens_at returned hand_claim_source from here on; what it is now is
-- db/functions/staked_citizens_at.sql (a later migration creates it from that file).
UPDATE "staked_citizens" c SET "hand_claim_source" = s."hand_claim_source"
FROM "citizen_stakes" s
WHERE s."block_number" = c."stake_block_number" AND s."log_index" = c."stake_log_index";
