-- The same address and hash checks, said as a length and an unbounded hex class: Postgres's regex
-- engine runs the bounded repeats ({40}, {64}) about ten times slower, and the checks run on every
-- event a backfill writes. Re-adding them checks the stored rows once, at the new cost.
ALTER TABLE "blocks" DROP CONSTRAINT "blocks_hash_check";--> statement-breakpoint
ALTER TABLE "indexer_checkpoints" DROP CONSTRAINT "indexer_checkpoints_staker_check";--> statement-breakpoint
ALTER TABLE "staked_citizens" DROP CONSTRAINT "staked_citizens_staker_check";--> statement-breakpoint
ALTER TABLE "staker_events" DROP CONSTRAINT "staker_events_account_check";--> statement-breakpoint
ALTER TABLE "staker_events" DROP CONSTRAINT "staker_events_block_hash_check";--> statement-breakpoint
ALTER TABLE "blocks" ADD CONSTRAINT "blocks_hash_check" CHECK (length(hash) = 66 and hash ~ '^0x[0-9a-f]+$');--> statement-breakpoint
ALTER TABLE "indexer_checkpoints" ADD CONSTRAINT "indexer_checkpoints_staker_check" CHECK (length(staker) = 42 and staker ~ '^0x[0-9a-f]+$');--> statement-breakpoint
ALTER TABLE "staked_citizens" ADD CONSTRAINT "staked_citizens_staker_check" CHECK (length(staker) = 42 and staker ~ '^0x[0-9a-f]+$');--> statement-breakpoint
ALTER TABLE "staker_events" ADD CONSTRAINT "staker_events_account_check" CHECK (length(account) = 42 and account ~ '^0x[0-9a-f]+$');--> statement-breakpoint
ALTER TABLE "staker_events" ADD CONSTRAINT "staker_events_block_hash_check" CHECK (length(block_hash) = 66 and block_hash ~ '^0x[0-9a-f]+$');