CREATE TYPE "public"."asset_type" AS ENUM('s1_citizen', 's2_citizen', 'bytes', 'lp');--> statement-breakpoint
CREATE TYPE "public"."staker_event_name" AS ENUM('Stake', 'Withdraw', 'Claim');--> statement-breakpoint
CREATE TABLE "api_tokens" (
	"id" serial PRIMARY KEY NOT NULL,
	"label" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "api_tokens_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "blocks" (
	"number" bigint PRIMARY KEY NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "blocks_hash_check" CHECK (hash ~ '^0x[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE TABLE "citizen_stakes" (
	"block_number" bigint NOT NULL,
	"log_index" integer NOT NULL,
	"season" smallint NOT NULL,
	"citizen_id" numeric(78, 0) NOT NULL,
	"staker" text NOT NULL,
	"timelock_duration" numeric(78, 0) NOT NULL,
	"timelock_multiplier" numeric(78, 0) NOT NULL,
	"timelock_end_time" numeric(78, 0) NOT NULL,
	"credit_yield" text,
	"identity_points" numeric(78, 0),
	"vault_id" numeric(78, 0),
	"vault_credit_multiplier" text,
	"vault_multiplier" numeric(78, 0),
	"hand_claim" boolean,
	"staked_vault_id" numeric(78, 0),
	"has_vault" boolean,
	"base_points" numeric(78, 0) NOT NULL,
	CONSTRAINT "citizen_stakes_block_number_log_index_pk" PRIMARY KEY("block_number","log_index")
);
--> statement-breakpoint
CREATE TABLE "citizens" (
	"season" smallint NOT NULL,
	"citizen_id" numeric(78, 0) NOT NULL,
	"identity_id" numeric(78, 0) NOT NULL,
	"item_cache_id" numeric(78, 0) NOT NULL,
	"land_deed_id" numeric(78, 0) NOT NULL,
	"component_vault_id" numeric(78, 0),
	"reward_rate" numeric(78, 0),
	"identity_class" text,
	"is_hand" boolean,
	"name" text,
	"image" text,
	CONSTRAINT "citizens_season_citizen_id_pk" PRIMARY KEY("season","citizen_id")
);
--> statement-breakpoint
CREATE TABLE "indexed_ranges" (
	"from_block" bigint PRIMARY KEY NOT NULL,
	"to_block" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "indexer_checkpoints" (
	"staker" text PRIMARY KEY NOT NULL,
	"chain_id" integer NOT NULL,
	"indexed_block" bigint NOT NULL,
	"scheduled_block" bigint NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "indexer_checkpoints_staker_check" CHECK (staker ~ '^0x[0-9a-f]{40}$')
);
--> statement-breakpoint
CREATE TABLE "staked_citizens" (
	"season" smallint NOT NULL,
	"citizen_id" numeric(78, 0) NOT NULL,
	"staker" text NOT NULL,
	"stake_block_number" bigint NOT NULL,
	"stake_log_index" integer NOT NULL,
	"identity_id" numeric(78, 0) NOT NULL,
	"item_cache_id" numeric(78, 0) NOT NULL,
	"land_deed_id" numeric(78, 0) NOT NULL,
	"name" text,
	"image" text,
	"is_hand" boolean,
	"credit_yield" text,
	"identity_points" numeric(78, 0),
	"vault_id" numeric(78, 0),
	"vault_credit_multiplier" text,
	"vault_multiplier" numeric(78, 0),
	"staked_vault_id" numeric(78, 0),
	"has_vault" boolean,
	"timelock_duration" numeric(78, 0) NOT NULL,
	"timelock_multiplier" numeric(78, 0) NOT NULL,
	"timelock_end_time" numeric(78, 0) NOT NULL,
	"staked_bytes" numeric(78, 0) NOT NULL,
	"bytes_points" numeric(78, 0) NOT NULL,
	"total_points" numeric(78, 0) NOT NULL,
	CONSTRAINT "staked_citizens_season_citizen_id_pk" PRIMARY KEY("season","citizen_id"),
	CONSTRAINT "staked_citizens_staker_check" CHECK (staker ~ '^0x[0-9a-f]{40}$')
);
--> statement-breakpoint
CREATE TABLE "staker_events" (
	"block_number" bigint NOT NULL,
	"log_index" integer NOT NULL,
	"block_hash" text NOT NULL,
	"transaction_hash" text NOT NULL,
	"event" "staker_event_name" NOT NULL,
	"account" text NOT NULL,
	"asset" text,
	"asset_type" "asset_type",
	"timelock_option" numeric(78, 0),
	"amount_or_token_id" numeric(78, 0),
	"reward" numeric(78, 0),
	"tax" numeric(78, 0),
	"citizen_season" smallint,
	"citizen_id" numeric(78, 0),
	CONSTRAINT "staker_events_block_number_log_index_pk" PRIMARY KEY("block_number","log_index"),
	CONSTRAINT "staker_events_account_check" CHECK (account ~ '^0x[0-9a-f]{40}$'),
	CONSTRAINT "staker_events_block_hash_check" CHECK (block_hash ~ '^0x[0-9a-f]{64}$')
);
--> statement-breakpoint
ALTER TABLE "citizen_stakes" ADD CONSTRAINT "citizen_stakes_block_number_log_index_staker_events_block_number_log_index_fk" FOREIGN KEY ("block_number","log_index") REFERENCES "public"."staker_events"("block_number","log_index") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "staked_citizens_staker_id_idx" ON "staked_citizens" USING btree ("staker","season","citizen_id");--> statement-breakpoint
CREATE INDEX "staked_citizens_staker_points_idx" ON "staked_citizens" USING btree ("staker","total_points","season","citizen_id");--> statement-breakpoint
CREATE INDEX "staked_citizens_staker_end_idx" ON "staked_citizens" USING btree ("staker","timelock_end_time","season","citizen_id");--> statement-breakpoint
CREATE INDEX "staker_events_citizen_idx" ON "staker_events" USING btree ("citizen_season","citizen_id","block_number","log_index");--> statement-breakpoint
CREATE INDEX "staker_events_account_idx" ON "staker_events" USING btree ("account","block_number");