-- Every column documented for analysts reading the tables in psql (\d+); test/db/column-comments.test.ts fails when one is missing.
COMMENT ON COLUMN "staker_events"."block_number" IS 'Block of the log; with log_index the event''s identity on the chain.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."log_index" IS 'Index of the log within its block.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."block_hash" IS 'Hash of the block the log was read from (lowercase 0x hex).';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."transaction_hash" IS 'Hash of the transaction that emitted the log.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."event" IS 'Stake, Withdraw or Claim.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."block_number" IS 'Block of the Stake event (staker_events.block_number).';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."log_index" IS 'Log index of the Stake event (staker_events.log_index).';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."season" IS 'Citizen season: 1 (S1) or 2 (S2).';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."citizen_id" IS 'Token id of the staked citizen within its season.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."staker" IS 'The wallet that staked the citizen (lowercase address).';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."vault_credit_multiplier" IS 'S1: the vault contract''s getCreditMultiplier(vault_id) at the stake (e.g. "Low", "?"); null with no vault.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."staked_vault_id" IS 'S1: the vault staked separately with the citizen (stakedS1.stakedVaultId); 0 for none.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."has_vault" IS 'S1: stakedS1.hasVault at the stake: a vault was staked separately with the citizen.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."season" IS 'Citizen season: 1 (S1) or 2 (S2); S1 and S2 ids overlap.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."citizen_id" IS 'Token id of the citizen within its season.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."identity_id" IS 'The Identity token the citizen was built from.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."item_cache_id" IS 'The Item Cache token the citizen was built from.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."land_deed_id" IS 'The Land Deed token the citizen was built from.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."is_hand" IS 'S1: identity_class is "Hand of Citadel".';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."name" IS 'Name from the citizen''s tokenURI metadata; null when unreadable (the API then serves "Citizen #<id>" or "Outer Citizen #<id>").';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."image" IS 'Image URL from the tokenURI metadata when it is http(s); else null.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."season" IS 'Citizen season: 1 (S1) or 2 (S2).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."citizen_id" IS 'Token id of the citizen within its season.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."stake_block_number" IS 'Block of the Stake event that put the citizen in (citizen_stakes.block_number).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."stake_log_index" IS 'Log index of that Stake event (citizen_stakes.log_index).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."identity_id" IS 'The citizen''s Identity token (citizens.identity_id).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."item_cache_id" IS 'The citizen''s Item Cache token (citizens.item_cache_id).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."land_deed_id" IS 'The citizen''s Land Deed token (citizens.land_deed_id).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."name" IS 'Metadata name; null when unreadable (the API serves its fallback name).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."image" IS 'Metadata image URL when http(s); the API prefers IMAGE_URL_TEMPLATE_S1/_S2 when set.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."is_hand" IS 'S1: the identity''s class is "Hand of Citadel"; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."credit_yield" IS 'S1: getCreditYield at the stake ("Low", "Mid", "High"; empty when unmapped); null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."identity_points" IS 'S1: identity credit points of credit_yield at the stake, raw points; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."vault_id" IS 'S1: the component vault, else the separately staked vault, else 0; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."vault_credit_multiplier" IS 'S1: getCreditMultiplier(vault_id) at the stake; null with no vault (the API says "None").';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."vault_multiplier" IS 'S1: the vault multiplier the stake applied, hundredths (100 with no vault); null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."staked_vault_id" IS 'S1: the vault staked separately with the citizen; 0 for none; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."has_vault" IS 'S1: a vault was staked separately with the citizen; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."timelock_duration" IS 'Timelock of the stake, seconds.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."timelock_multiplier" IS 'Timelock multiplier, hundredths (100 = 1.00x).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."timelock_end_time" IS 'Unix seconds when the citizen may be withdrawn.';--> statement-breakpoint
COMMENT ON COLUMN "blocks"."number" IS 'Block number.';--> statement-breakpoint
COMMENT ON COLUMN "blocks"."hash" IS 'The block''s hash as the indexer saw it (lowercase 0x hex); a different hash from the node means a reorg.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."staker" IS 'The staker contract indexed (lowercase address); one row per staker.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."chain_id" IS 'Chain id of the node the rows were read from.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."indexed_block" IS 'Every table is complete up to and including this block.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."updated_at" IS 'When the checkpoint last moved.';--> statement-breakpoint
COMMENT ON COLUMN "indexed_ranges"."from_block" IS 'First block of a chunk written above the checkpoint.';--> statement-breakpoint
COMMENT ON COLUMN "indexed_ranges"."to_block" IS 'Last block of that chunk (inclusive).';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."season" IS 'Season of the citizen whose read failed: 1 or 2.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."citizen_id" IS 'Token id of the citizen whose read failed.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."recorded_at" IS 'When the failure was last recorded.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."component" IS 'The indexer role: follow (the head follower) or chunks (chunk jobs).';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."ok_at" IS 'When the role last succeeded.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."last_error" IS 'One-line message of the role''s last error.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."last_error_at" IS 'When the last error happened.';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."id" IS 'Token id, as shown by token list and taken by token revoke.';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."label" IS 'What the token is for, given at creation (never blank).';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."token_hash" IS 'SHA-256 hex of the bearer token; the token itself is never stored.';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."created_at" IS 'When the token was created.';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."revoked_at" IS 'When the token was revoked; null while it is valid.';
