/**
 * Every read and write the indexer makes in Postgres, one module per concern, joined here into
 * `IndexerStore`. Chunk writes from any number of workers on any number of hosts run side by
 * side; checkpoint moves, the follower's writes, reindexes and reorg rollbacks take one
 * transaction-scoped advisory lock (checkpoint.ts) and apply one at a time. RPC work happens
 * outside every transaction. How a write proves it links to what is stored: range-writes.ts.
 */
import type { Database } from "../../db/client.ts";
import type { CitizenRow, ReadFailureRow } from "../../db/schema.ts";
import { type Checkpoint, createCheckpointStore } from "./checkpoint.ts";
import {
  createHealthStore,
  type HealthOutcome,
  type HealthRow,
  type IndexerRole,
} from "./health.ts";
import {
  createInferredStakes,
  type InferredConfiguration,
  type InferredHandClaim,
} from "./inferred-stakes.ts";
import { createLookups } from "./lookups.ts";
import {
  createMetadataStore,
  type DueReadFailure,
  type MetadataUpdate,
  type PostponedReadFailure,
  type ReadFailureListing,
  type StoredMetadata,
} from "./metadata.ts";
import type { CitizenKeyRow } from "./projection.ts";
import {
  createRangeWrites,
  type Indexed,
  type RangeWrite,
  type WriteOptions,
} from "./range-writes.ts";
import type { BlockRange } from "./ranges.ts";
import { createRewrites } from "./rewrites.ts";
import { createTalliesStore } from "./tallies.ts";

export { HASHES_KEPT } from "./advance.ts";
export { type Checkpoint, CheckpointMismatch } from "./checkpoint.ts";
export type { HealthOutcome, HealthRow, IndexerRole } from "./health.ts";
export type { InferredConfiguration, InferredHandClaim } from "./inferred-stakes.ts";
export type {
  DueReadFailure,
  MetadataUpdate,
  PostponedReadFailure,
  ReadFailureListing,
  StoredMetadata,
} from "./metadata.ts";
export type { CitizenKeyRow } from "./projection.ts";
export {
  CheckpointMoved,
  type Indexed,
  LinkConflict,
  type RangeWrite,
  type WriteOptions,
} from "./range-writes.ts";

/**
 * What the indexer keeps in Postgres, and the only way it changes it. Writes, rollback and the
 * checkpoint (`checkpoint.ts`), range writes (`range-writes.ts`, the checkpoint's advance in
 * `advance.ts`), rollback and reprojection (`rewrites.ts`), lookups for the stages
 * (`lookups.ts`), inferred stakes (`inferred-stakes.ts`),
 * health records (`health.ts`), citizen metadata and read failures (`metadata.ts`) and the counts
 * for `status` (`tallies.ts`), each built alone.
 */
export interface IndexerStore {
  checkpoint(): Promise<Checkpoint | undefined>;
  ensureCheckpoint(staker: string, chainId: number, startBlock: bigint): Promise<Checkpoint>;
  /**
   * Writes a fetched range idempotently and moves the checkpoint over every range now
   * contiguous. With `extendsCheckpoint` (the follower) the range must start right above it.
   * Throws LinkConflict when a claimed hash differs from a stored one.
   */
  writeRange(write: RangeWrite, options?: WriteOptions): Promise<Indexed>;
  /** Replaces what an indexed range holds with a fresh fetch (operator reindex). */
  replaceRange(write: RangeWrite): Promise<Indexed>;
  /** Forgets everything above `ancestor` and re-projects what it touched. */
  rollbackTo(ancestor: bigint): Promise<{ removedEvents: number }>;
  /** Stored hashes at or below `at`, newest first. */
  recentBlocks(at: bigint, limit: number): Promise<Array<{ number: bigint; hash: string }>>;
  storedHash(number: bigint): Promise<string | undefined>;
  /** Distinct (block, hash) of stored events at or below `at`, oldest first. */
  eventBlocks(at: bigint): Promise<Array<{ number: bigint; hash: string }>>;
  markScheduled(expected: bigint, to: bigint): Promise<boolean>;
  raiseScheduled(to: bigint): Promise<void>;
  countEvents(from: bigint, to: bigint): Promise<number>;
  /** The parts of (indexed, scheduled] no written range covers yet. */
  missingRanges(): Promise<BlockRange[]>;
  knownCitizens(keys: CitizenKeyRow[]): Promise<CitizenRow[]>;
  recordHealth(role: IndexerRole, outcome: HealthOutcome): Promise<void>;
  health(): Promise<HealthRow[]>;
  /** Recorded read failures, each with the name and image its citizen is served meanwhile. */
  readFailures(): Promise<ReadFailureListing[]>;
  /** Records tokenURIs that do not read; the citizens keep their stored name and image. */
  recordReadFailures(rows: ReadFailureRow[]): Promise<void>;
  /** Replaces the metadata of citizens read again, and forgets their recorded failures. */
  updateMetadata(rows: MetadataUpdate[]): Promise<void>;
  /** Up to `limit` citizens' stored metadata in key order, after `after` (a metadata refresh). */
  storedMetadata(after: CitizenKeyRow | undefined, limit: number): Promise<StoredMetadata[]>;
  /** Up to `limit` recorded tokenURI failures whose retry time has come, the longest due first. */
  dueReadFailures(limit: number): Promise<DueReadFailure[]>;
  /** A retry that failed again: the failure keeps its row, counted, and is tried again later. */
  postponeReadFailures(rows: PostponedReadFailure[]): Promise<void>;
  /**
   * Rebuilds the staked-citizen history and staked_citizens from the stored event log and reads
   * alone (no RPC), in one transaction: readers see the old rows until it commits, writers wait
   * for it.
   */
  reproject(): Promise<{ citizens: number; indexedBlock: bigint }>;
  /**
   * Writes the API record of every staked_citizens row whose stored one is another writer's (or
   * missing) with this version's writer; returns how many. `migrate` runs it.
   */
  refillRecords(): Promise<number>;
  /**
   * Counts for `status`: recorded read failures, stakes whose Hand flag or configuration was
   * inferred, and the RPC calls every process made against the events and citizen stakes stored.
   */
  counts(): Promise<{
    readFailures: number;
    /** Of those, tokenURIs that stopped reading: served with the name and image last read. */
    staleMetadata: number;
    inferredHandClaims: number;
    inferredConfigurations: number;
    events: number;
    citizenStakes: number;
    rpcCalls: Record<string, number>;
  }>;
  /** Adds a process's JSON-RPC calls by method (deltas since its last report). */
  addRpcCalls(calls: Record<string, number>): Promise<void>;
  /** Keeps the finality boundary the follower saw (answers as of blocks below it are final). */
  recordFinalized(block: bigint): Promise<void>;
  /** The S1 stakes whose Hand flag is inferred (the node had no trace API), oldest first. */
  inferredHandClaims(): Promise<InferredHandClaim[]>;
  /** The S1 stakes whose configuration figures are inferred (none explains points), oldest first. */
  inferredConfigurations(): Promise<InferredConfiguration[]>;
  /**
   * Writes a Hand flag read from a trace over an inferred one, with the multiplier it applied,
   * and re-projects the citizen (the data version moves). False when it is no longer inferred.
   */
  settleHandClaim(
    stake: { blockNumber: bigint; logIndex: number },
    settled: { claim: boolean; vaultMultiplier: bigint },
  ): Promise<boolean>;
}

export function createIndexerStore(db: Database): IndexerStore {
  const { writer, ...checkpoint } = createCheckpointStore(db);
  return {
    ...checkpoint,
    ...createRangeWrites(db, writer),
    ...createRewrites(writer),
    ...createLookups(db),
    ...createInferredStakes(db, writer),
    ...createHealthStore(db),
    ...createMetadataStore(db, writer),
    ...createTalliesStore(db),
  };
}
