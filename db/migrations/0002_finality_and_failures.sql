CREATE TYPE "public"."hand_claim_source" AS ENUM('points', 'calldata', 'trace', 'inferred');--> statement-breakpoint
CREATE TABLE "indexer_health" (
	"component" text PRIMARY KEY NOT NULL,
	"ok_at" timestamp with time zone,
	"failing_since" timestamp with time zone,
	"last_error" text,
	"last_error_at" timestamp with time zone,
	"fatal" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "read_failures" (
	"season" smallint NOT NULL,
	"citizen_id" numeric(78, 0) NOT NULL,
	"read" text NOT NULL,
	"reason" text NOT NULL,
	"block_number" bigint NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "read_failures_season_citizen_id_read_pk" PRIMARY KEY("season","citizen_id","read")
);
--> statement-breakpoint
ALTER TABLE "citizen_stakes" ADD COLUMN "hand_claim_source" "hand_claim_source";--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."hand_claim_source" IS 'S1: where hand_claim was learned: points (only one reading fits), calldata (direct call), trace (inner call of a contract wallet), inferred (both fit, no trace API: no claim assumed).';--> statement-breakpoint
COMMENT ON TABLE "read_failures" IS 'Citizen reads that failed on data, not on the node (a tokenURI that reverts or holds no readable metadata); the citizen is served with the fallback name. Cleared when a later read succeeds.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."read" IS 'The view that failed, e.g. tokenURI.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."reason" IS 'Why: the revert reason, or what made the answer unreadable.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."block_number" IS 'The block the failing read was made at.';--> statement-breakpoint
COMMENT ON TABLE "indexer_health" IS 'How each indexer role (follow, chunks) is doing, written by the role itself; status and /readyz read it.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."failing_since" IS 'Set on the first failure after a success, cleared by the next success.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."fatal" IS 'The last error cannot heal by retrying: an operator must act (its message names the command).';
