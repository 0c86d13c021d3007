DROP INDEX "staked_citizens_history_staker_idx";--> statement-breakpoint
CREATE INDEX "staked_citizens_history_staker_hash_idx" ON "staked_citizens_history" USING gist (hashtextextended("staker", 0),int8range("valid_from", "valid_to"));
-- staked_citizens_of_wallet_at found a wallet's rows through this index from here on; what it
-- is now is db/functions/staked_citizens_of_wallet_at.sql (a later migration creates it).
