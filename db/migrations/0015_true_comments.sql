-- Comments that said less or other than the tables hold, restated from what the indexer writes
-- and the staker does (test/db/column-comments.test.ts checks the vault ones against the chain).
-- hasVault is the staker's "this stake counts a vault": the citizen's component vault does too,
-- with stakedVaultId 0 (docs/staker.md §2, vault cases), so most has_vault rows have none staked.
COMMENT ON COLUMN "citizen_stakes"."has_vault" IS 'S1: stakedS1.hasVault at the stake: the stake counts a vault, the citizen''s own component vault (staked_vault_id 0) or one staked with it (staked_vault_id); it sets the BYTES cap (VAULT_CAP, else NO_VAULT_CAP); null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."has_vault" IS 'S1: stakedS1.hasVault: the stake counts a vault, the citizen''s own component vault (staked_vault_id 0) or one staked with it (staked_vault_id); null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."staked_vault_id" IS 'S1: stakedS1.stakedVaultId at the stake: a vault staked with the citizen (escrowed with it until the withdrawal); 0 when none was, as when the citizen has a component vault; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."staked_vault_id" IS 'S1: stakedS1.stakedVaultId: a vault staked with the citizen; 0 when none was, as when the citizen has a component vault; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."vault_id" IS 'S1: the vault the stake counts: the component vault, else the vault staked with it, else 0; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."vault_id" IS 'S1: the vault the stake counts: the component vault, else the vault staked with it, else 0; null for S2.';--> statement-breakpoint
-- A Hand flag inferred for want of a trace API is settled in place once one is there.
COMMENT ON TABLE "citizen_stakes" IS 'One row per citizen Stake event: what the stake applied, read from the chain at the stake''s block. Frozen afterwards, but for an inferred Hand flag settled later from a trace (hand_claim, hand_claim_source, vault_multiplier); BYTES add points on top.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."hand_claim" IS 'S1: the stake claimed Hand of Citadel (the call''s fifth word is 1); false while hand_claim_source is inferred; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."credit_yield" IS 'S1: getCreditYield(id, component vault) at the stake; empty when the staker has no mapping; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."identity_points" IS 'S1: identityCreditPoints(credit_yield) at the stake; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."vault_multiplier" IS 'S1: the vault multiplier the stake applied, hundredths: vaultCreditMultiplier("?") for a Hand claim, the vault''s configured one, or 100 with no vault; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizen_stakes"."vault_credit_multiplier" IS 'S1: the vault contract''s getCreditMultiplier(vault_id) at the stake (e.g. "Low", "?"); null with no vault and for S2.';--> statement-breakpoint
-- Rows stay after a withdrawal; names and images are read again at the head.
COMMENT ON TABLE "citizens" IS 'Every citizen ever staked: its components, read from its season''s citizen contract (they never change), and the name and image of its tokenURI metadata, which the metadata refresher reads again at the head.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."component_vault_id" IS 'S1: the vault built into the citizen; 0 for none; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."reward_rate" IS 'S1: getRewardRateOfTokenId, the base rate the staker maps to a credit yield; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."identity_class" IS 'S1: the identity''s class; "Hand of Citadel" marks a Hand; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."is_hand" IS 'S1: identity_class is "Hand of Citadel"; null for S2.';--> statement-breakpoint
COMMENT ON COLUMN "citizens"."name" IS 'Name from the citizen''s tokenURI metadata; null when none was ever read (the API then serves "Citizen #<id>" or "Outer Citizen #<id>"). A later read that fails keeps it.';--> statement-breakpoint
COMMENT ON COLUMN "staked_citizens"."name" IS 'Metadata name (citizens.name); null when none was ever read (the API serves its fallback name).';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."asset_type" IS 'The staker''s AssetType, told apart by the asset address; null for Claim.';--> statement-breakpoint
COMMENT ON COLUMN "staker_events"."amount_or_token_id" IS 'Citizen id for citizen Stake/Withdraw; amount in wei for BYTES and LP; null for Claim.';--> statement-breakpoint
-- Only the blocks within 256 of the checkpoint are kept (HASHES_KEPT), each as a write claimed it.
COMMENT ON TABLE "blocks" IS 'Block hashes the indexer''s writes claimed (range seams, blocks with staker logs, every block the follower wrote), kept from 256 blocks below indexed_block up: a node that now names another hash for one has reorged.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."scheduled_block" IS 'The highest block handed to chunk jobs so far (a rollback below it may lower it).';--> statement-breakpoint
COMMENT ON COLUMN "indexer_checkpoints"."updated_at" IS 'When the indexer last wrote: the checkpoint moved, chunks were scheduled, or served rows changed in place (metadata, a settled Hand flag). The API''s ETags take it as the data''s version.';--> statement-breakpoint
-- The refresher's retries move attempts, reason, block and retry time, not recorded_at.
COMMENT ON TABLE "read_failures" IS 'Citizen reads that failed on data, not on the node (a tokenURI that reverts or holds no readable metadata); the citizen is served with the name and image last read, else the fallback name. Deleted when a later read succeeds.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."block_number" IS 'The block of a failing read: the first, or a retry''s since.';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."recorded_at" IS 'When the failure was recorded, or recorded again by a range write or read-failures --retry (the metadata refresher''s retries count in attempts instead).';--> statement-breakpoint
COMMENT ON COLUMN "read_failures"."attempts" IS 'The metadata refresher''s retries that failed too since the failure was first recorded.';--> statement-breakpoint
COMMENT ON COLUMN "indexer_health"."ok_at" IS 'When the role last succeeded, up to 5 s behind while all is well (it is written at most that often).';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."label" IS 'What the token is for, given at creation (token create refuses a blank one).';
