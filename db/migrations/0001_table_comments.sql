COMMENT ON TABLE "staker_events" IS 'Every Stake, Withdraw and Claim log of the NeoTokyoStaker, decoded; the truth the other tables are projected from. Amounts are exact wei.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."account" IS 'Stake: the staker; Withdraw: the caller; Claim: the recipient (lowercase address).';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."asset" IS 'The token contract the event is about: S1 or S2 citizen, BYTES or LP; null for Claim.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."asset_type" IS 'The staker''s AssetType, told apart by the asset address.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."timelock_option" IS 'Stake only. Citizens and LP: duration_seconds << 128 | multiplier. BYTES: season << 128 | citizen id.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."amount_or_token_id" IS 'Citizen id for citizen Stake/Withdraw; amount in wei for BYTES and LP.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."reward" IS 'Claim only: BYTES minted to the recipient, wei.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."tax" IS 'Claim only: BYTES minted to the DAO treasury, wei.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."citizen_season" IS 'The season (1 or 2) of the citizen this event changes; null for LP and Claim.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."citizen_id" IS 'The citizen this event changes (BYTES stakes included); null for LP and Claim.';--> statement-breakpoint
COMMENT ON TABLE "citizen_stakes" IS 'One row per citizen Stake event: what the stake applied, read from the chain at the stake''s block. Frozen afterwards; BYTES add points on top.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."timelock_duration" IS 'Seconds: timelock_option >> 128.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."timelock_multiplier" IS 'Hundredths (100 = 1.00x): timelock_option & (2^128 - 1).';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."timelock_end_time" IS 'Unix seconds when the citizen may be withdrawn.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."credit_yield" IS 'S1: getCreditYield(id, component vault) at the stake; empty when the staker has no mapping.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."identity_points" IS 'S1: identityCreditPoints(credit_yield) at the stake.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."vault_id" IS 'S1: the component vault, else the separately staked vault, else 0.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."vault_multiplier" IS 'S1: the vault multiplier the stake applied, hundredths: vaultCreditMultiplier("?") for a Hand claim, the vault''s configured one, or 100 with no vault.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."hand_claim" IS 'S1: the stake claimed Hand of Citadel (calldata flag 1).';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."base_points" IS 'Contract points of the stake before any BYTES bonus.';--> statement-breakpoint
COMMENT ON TABLE "citizens" IS 'Each staked citizen''s components, read from its season''s citizen contract.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."component_vault_id" IS 'S1: the vault built into the citizen; 0 for none.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."reward_rate" IS 'S1: getRewardRateOfTokenId, the base rate the staker maps to a credit yield.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."identity_class" IS 'S1: the identity''s class; "Hand of Citadel" marks a Hand.';--> statement-breakpoint
COMMENT ON TABLE "staked_citizens" IS 'The citizens staked as of indexer_checkpoints.indexed_block, one row each, with what the API serves. Points and multipliers are the contract''s raw numbers (100 points = one Neo Tokyo point; multiplier 100 = 1.00x).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."staker" IS 'The wallet the citizen is staked by (lowercase).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."staked_bytes" IS 'BYTES staked into the citizen, wei.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."bytes_points" IS 'Sum over the stake''s BYTES deposits of floor(amount * 100 / 200e18).';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."total_points" IS 'stakedS1/stakedS2(staker, id).points: base points plus bytes_points.';--> statement-breakpoint
COMMENT ON TABLE "blocks" IS 'Hashes of recently indexed blocks, to notice a reorg.';--> statement-breakpoint
COMMENT ON TABLE "indexer_checkpoints" IS 'The indexer''s progress: every table is complete up to indexed_block.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."scheduled_block" IS 'The highest block handed to chunk jobs so far.';--> statement-breakpoint
COMMENT ON TABLE "indexed_ranges" IS 'Chunks written but not yet below the checkpoint (they finished out of order).';--> statement-breakpoint
COMMENT ON TABLE "api_tokens" IS 'Bearer tokens of the read API; only a SHA-256 hex of each token is kept.';
