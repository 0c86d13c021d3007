/**
 * The one source of truth for every table. Row types come from `$inferSelect`/`$inferInsert`;
 * migrations are generated from this file by drizzle-kit (`bun run db:generate`), which reads the
 * enums here too: they are defined with the shared column types in db/columns.ts.
 *
 * Conventions: uint256 values are numeric(78,0) read as bigint (exact); addresses and hashes
 * are lowercase 0x-hex text with a check; a citizen is keyed by (season, citizen_id) because
 * S1 and S2 ids overlap and a citizen sits in the staker's escrow at most once at a time.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  foreignKey,
  index,
  integer,
  pgTable,
  primaryKey,
  serial,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import {
  assetType,
  blockNumber,
  configurationSource,
  handClaimSource,
  isAddress,
  isHash,
  stakerEventName,
  uint256,
} from "./columns.ts";

export { assetType, configurationSource, handClaimSource, stakerEventName };

/** Every Stake, Withdraw and Claim log of the staker: the truth the state is projected from. */
export const stakerEvents = pgTable(
  "staker_events",
  {
    blockNumber: blockNumber("block_number").notNull(),
    logIndex: integer("log_index").notNull(),
    blockHash: text("block_hash").notNull(),
    transactionHash: text("transaction_hash").notNull(),
    event: stakerEventName("event").notNull(),
    /** Stake: the staker; Withdraw: the caller; Claim: the recipient. */
    account: text("account").notNull(),
    /** The token contract the event is about (null for Claim). */
    asset: text("asset"),
    assetType: assetType("asset_type"),
    /** Stake only: the encoded option (duration << 128 | multiplier), or season << 128 | citizen for BYTES. */
    timelockOption: uint256("timelock_option"),
    /** Stake and Withdraw: the citizen id, or an amount in wei for BYTES and LP. */
    amountOrTokenId: uint256("amount_or_token_id"),
    /** Claim only, in wei. */
    reward: uint256("reward"),
    tax: uint256("tax"),
    /** The citizen this event changes (citizen Stake/Withdraw and BYTES Stake), else null. */
    citizenSeason: smallint("citizen_season"),
    citizenId: uint256("citizen_id"),
  },
  (t) => [
    primaryKey({ columns: [t.blockNumber, t.logIndex] }),
    index("staker_events_citizen_idx").on(t.citizenSeason, t.citizenId, t.blockNumber, t.logIndex),
    index("staker_events_account_idx").on(t.account, t.blockNumber),
    check("staker_events_account_check", isAddress("account")),
    check("staker_events_block_hash_check", isHash("block_hash")),
  ],
);

/**
 * What each citizen Stake applied, read from the chain at the stake's block: frozen afterwards,
 * but for a Hand flag inferred for want of a trace API, settled in place once one answers.
 */
export const citizenStakes = pgTable(
  "citizen_stakes",
  {
    blockNumber: blockNumber("block_number").notNull(),
    logIndex: integer("log_index").notNull(),
    season: smallint("season").notNull(),
    citizenId: uint256("citizen_id").notNull(),
    staker: text("staker").notNull(),
    timelockDuration: uint256("timelock_duration").notNull(),
    timelockMultiplier: uint256("timelock_multiplier").notNull(),
    timelockEndTime: uint256("timelock_end_time").notNull(),
    /** S1 only: getCreditYield(id, componentVault) as the stake read it; "" when unmapped. */
    creditYield: text("credit_yield"),
    identityPoints: uint256("identity_points"),
    /** S1 only: the component vault, else the separately staked vault, else 0. */
    vaultId: uint256("vault_id"),
    vaultCreditMultiplier: text("vault_credit_multiplier"),
    /** S1 only: the vault multiplier the stake applied ("?" for a Hand claim, 100 with no vault). */
    vaultMultiplier: uint256("vault_multiplier"),
    handClaim: boolean("hand_claim"),
    handClaimSource: handClaimSource("hand_claim_source"),
    /** S1 only: stakedS1.stakedVaultId, a vault staked with the citizen; 0 with a component vault. */
    stakedVaultId: uint256("staked_vault_id"),
    /**
     * S1 only: stakedS1.hasVault, the stake counts a vault: the citizen's component vault (then
     * stakedVaultId is 0) or one staked with it.
     */
    hasVault: boolean("has_vault"),
    /** The stake's points before any BYTES bonus. */
    basePoints: uint256("base_points").notNull(),
    /** S1 only: where credit_yield, identity_points and vault_multiplier were read. */
    configurationSource: configurationSource("configuration_source"),
  },
  (t) => [
    primaryKey({ columns: [t.blockNumber, t.logIndex] }),
    foreignKey({
      columns: [t.blockNumber, t.logIndex],
      foreignColumns: [stakerEvents.blockNumber, stakerEvents.logIndex],
    }).onDelete("cascade"),
  ],
);

/**
 * Every citizen ever staked: its components, read from its season's citizen contract (they do
 * not change), and its tokenURI metadata, which the metadata refresher reads again.
 */
export const citizens = pgTable(
  "citizens",
  {
    season: smallint("season").notNull(),
    citizenId: uint256("citizen_id").notNull(),
    identityId: uint256("identity_id").notNull(),
    itemCacheId: uint256("item_cache_id").notNull(),
    landDeedId: uint256("land_deed_id").notNull(),
    /** S1 only: 0 when the citizen has no component vault. */
    componentVaultId: uint256("component_vault_id"),
    rewardRate: uint256("reward_rate"),
    identityClass: text("identity_class"),
    isHand: boolean("is_hand"),
    /** From the citizen's tokenURI metadata when it is readable. */
    name: text("name"),
    image: text("image"),
  },
  (t) => [primaryKey({ columns: [t.season, t.citizenId] })],
);

/** The citizens staked now (as of the indexer checkpoint): one row each, everything the API serves. */
export const stakedCitizens = pgTable(
  "staked_citizens",
  {
    season: smallint("season").notNull(),
    citizenId: uint256("citizen_id").notNull(),
    staker: text("staker").notNull(),
    stakeBlockNumber: blockNumber("stake_block_number").notNull(),
    stakeLogIndex: integer("stake_log_index").notNull(),
    identityId: uint256("identity_id").notNull(),
    itemCacheId: uint256("item_cache_id").notNull(),
    landDeedId: uint256("land_deed_id").notNull(),
    name: text("name"),
    image: text("image"),
    isHand: boolean("is_hand"),
    creditYield: text("credit_yield"),
    identityPoints: uint256("identity_points"),
    vaultId: uint256("vault_id"),
    vaultCreditMultiplier: text("vault_credit_multiplier"),
    vaultMultiplier: uint256("vault_multiplier"),
    stakedVaultId: uint256("staked_vault_id"),
    hasVault: boolean("has_vault"),
    timelockDuration: uint256("timelock_duration").notNull(),
    timelockMultiplier: uint256("timelock_multiplier").notNull(),
    timelockEndTime: uint256("timelock_end_time").notNull(),
    /** In wei; the API shows BYTES. */
    stakedBytes: uint256("staked_bytes").notNull(),
    bytesPoints: uint256("bytes_points").notNull(),
    totalPoints: uint256("total_points").notNull(),
    /**
     * S1 only: where the stake's Hand flag was learned (citizen_stakes.hand_claim_source);
     * `inferred` means the served vault multiplier is an assumption (the API says so).
     */
    handClaimSource: handClaimSource("hand_claim_source"),
    /**
     * The API's record of this row as JSON text, written with the row by the projection
     * (indexer/store/projection.ts) so a read serves it as it is; null where the row was written
     * otherwise (db/functions/forget_stale_record.sql), and then the API renders the row.
     */
    record: text("record"),
    /** Which record writer wrote `record` (api/modules/citizens/record.ts RECORD_WRITER). */
    recordWriter: text("record_writer"),
  },
  (t) => [
    primaryKey({ columns: [t.season, t.citizenId] }),
    index("staked_citizens_staker_id_idx").on(t.staker, t.season, t.citizenId),
    index("staked_citizens_staker_points_idx").on(t.staker, t.totalPoints, t.season, t.citizenId),
    index("staked_citizens_staker_end_idx").on(t.staker, t.timelockEndTime, t.season, t.citizenId),
    check("staked_citizens_staker_check", isAddress("staker")),
  ],
);

/**
 * Every staked state each citizen has been in, as validity ranges of blocks: a row holds for
 * every block N with valid_from <= N < valid_to (valid_to null: still open), so an answer as of
 * any block is an index lookup instead of a replay of the events. Written by the projection
 * (the SQL function project_staked_citizens) and read through staked_citizens_at; the columns
 * the stake froze and the citizen's own come from citizen_stakes and citizens at read time.
 * No foreign key to citizen_stakes: a rollback truncates these rows before their events go.
 */
export const stakedCitizensHistory = pgTable(
  "staked_citizens_history",
  {
    season: smallint("season").notNull(),
    citizenId: uint256("citizen_id").notNull(),
    /** The block whose events put the citizen in this state. */
    validFrom: blockNumber("valid_from").notNull(),
    /** The block whose events ended this state; null while it holds. */
    validTo: blockNumber("valid_to"),
    staker: text("staker").notNull(),
    stakeBlockNumber: blockNumber("stake_block_number").notNull(),
    stakeLogIndex: integer("stake_log_index").notNull(),
    /** In wei. */
    stakedBytes: uint256("staked_bytes").notNull(),
    bytesPoints: uint256("bytes_points").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.season, t.citizenId, t.validFrom] }),
    uniqueIndex("staked_citizens_history_open_idx")
      .on(t.season, t.citizenId)
      .where(sql`${t.validTo} is null`),
    // A wallet's rows at a block: the staker and the block range in one GiST (btree_gist). The
    // staker goes in as its 64-bit hash: btree_gist keys text as variable-length bounds, and on a
    // 100k-row history that made each insert into this index cost ~4x the same index over a
    // bigint (readers compare the staker itself too, so a collision only costs a recheck).
    index("staked_citizens_history_staker_hash_idx").using(
      "gist",
      sql`hashtextextended(${t.staker}, 0)`,
      sql`int8range(${t.validFrom}, ${t.validTo})`,
    ),
    check("staked_citizens_history_range_check", sql`${t.validTo} > ${t.validFrom}`),
  ],
);

/** Hashes of blocks the indexer has seen, to notice a reorg below its checkpoint. */
export const blocks = pgTable(
  "blocks",
  {
    number: blockNumber("number").primaryKey(),
    hash: text("hash").notNull(),
  },
  () => [check("blocks_hash_check", isHash("hash"))],
);

/** The indexer's checkpoint: everything up to indexed_block is in the tables. */
export const indexerCheckpoints = pgTable(
  "indexer_checkpoints",
  {
    staker: text("staker").primaryKey(),
    chainId: integer("chain_id").notNull(),
    indexedBlock: blockNumber("indexed_block").notNull(),
    /** The highest block handed to backfill chunk jobs so far. */
    scheduledBlock: blockNumber("scheduled_block").notNull(),
    /**
     * The finality boundary the follower last saw: blocks at or below it do not change any
     * more, so answers about them (as of such a block) can be cached for good.
     */
    finalizedBlock: blockNumber("finalized_block"),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  () => [check("indexer_checkpoints_staker_check", isAddress("staker"))],
);

/** Chunks already written but not yet below the checkpoint (they finished out of order). */
export const indexedRanges = pgTable("indexed_ranges", {
  fromBlock: blockNumber("from_block").primaryKey(),
  toBlock: blockNumber("to_block").notNull(),
});

/**
 * Reads that failed on data rather than on the node: a citizen's tokenURI that reverts or does not
 * hold readable metadata. The citizen is indexed with the API's fallback name; an operator can
 * list these and read them again later.
 */
export const readFailures = pgTable(
  "read_failures",
  {
    season: smallint("season").notNull(),
    citizenId: uint256("citizen_id").notNull(),
    /** The view that failed, e.g. tokenURI. */
    read: text("read").notNull(),
    reason: text("reason").notNull(),
    blockNumber: blockNumber("block_number").notNull(),
    recordedAt: timestamp("recorded_at", { withTimezone: true }).notNull().defaultNow(),
    /** Reads again that failed too since the failure was recorded (the metadata refresher's). */
    attempts: integer("attempts").notNull().default(0),
    /** When the metadata refresher reads it again: later after each failed attempt. */
    retryAt: timestamp("retry_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.season, t.citizenId, t.read] })],
);

/**
 * How each long-running indexer role is doing, written by the role itself: `status` and the
 * API's /readyz read it, so a follower that keeps failing is visible from any host.
 */
export const indexerHealth = pgTable("indexer_health", {
  /** follow (the head follower) or chunks (chunk jobs). */
  component: text("component").primaryKey(),
  okAt: timestamp("ok_at", { withTimezone: true }),
  /** Set on the first failure after a success, cleared by the next success. */
  failingSince: timestamp("failing_since", { withTimezone: true }),
  lastError: text("last_error"),
  lastErrorAt: timestamp("last_error_at", { withTimezone: true }),
  /** The last error cannot heal by retrying (an operator must act). */
  fatal: boolean("fatal").notNull().default(false),
});

/**
 * JSON-RPC calls the indexer's processes made, by method, summed over every process that ran
 * workers: `status` shows them per event and per citizen stake.
 */
export const rpcCalls = pgTable("rpc_calls", {
  method: text("method").primaryKey(),
  calls: bigint("calls", { mode: "number" }).notNull().default(0),
  since: timestamp("since", { withTimezone: true }).notNull().defaultNow(),
});

/** Bearer tokens of the read API: only a SHA-256 of each token is kept. */
export const apiTokens = pgTable("api_tokens", {
  id: serial("id").primaryKey(),
  label: text("label").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  revokedAt: timestamp("revoked_at", { withTimezone: true }),
  /** Refused from this moment on, like a revoked token; never when null. */
  expiresAt: timestamp("expires_at", { withTimezone: true }),
  /** The last request that used it, up to two minutes behind: written at most once a minute. */
  lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
});

export type StakerEventRow = typeof stakerEvents.$inferInsert;
export type CitizenStakeRow = typeof citizenStakes.$inferInsert;
export type CitizenRow = typeof citizens.$inferInsert;
export type StakedCitizen = typeof stakedCitizens.$inferSelect;
export type ReadFailureRow = typeof readFailures.$inferInsert;
