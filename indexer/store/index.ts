/**
 * Every read and write the indexer makes in Postgres. Chunk writes from any number of workers
 * on any number of hosts run side by side; checkpoint moves, the follower's writes, reindexes
 * and reorg rollbacks take one transaction-scoped advisory lock and apply one at a time. RPC
 * work happens outside every transaction.
 *
 * Every write that adds blocks proves it links to what is stored: it claims the hash of each
 * block it saw (its first block's parent, its last block, blocks with logs, or every block near
 * the head), and a claim that differs from a stored hash for the same number is a
 * `LinkConflict`, never an overwrite. Two ranges written out of order meet at the seam block
 * (one claims it as its last block, the other as its first block's parent), so the indexed
 * prefix the checkpoint walks over is one hash chain.
 */
import { and, asc, count, desc, eq, gt, isNotNull, lte, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import {
  blocks,
  type CitizenRow,
  type CitizenStakeRow,
  citizenStakes,
  citizens,
  indexedRanges,
  indexerCheckpoints,
  type ReadFailureRow,
  readFailures,
  type StakerEventRow,
  stakedCitizens,
  stakedCitizensHistory,
  stakerEvents,
} from "../../db/schema.ts";
import {
  createHealthStore,
  type HealthOutcome,
  type HealthRow,
  type IndexerRole,
} from "./health.ts";
import {
  createMetadataStore,
  type DueReadFailure,
  type MetadataUpdate,
  type PostponedReadFailure,
  type ReadFailureListing,
  type StoredMetadata,
} from "./metadata.ts";
import {
  type CitizenKeyRow,
  projectHistory,
  recompute,
  type Transaction,
  truncateHistory,
} from "./projection.ts";
import { type BlockRange, contiguousEnd, missingRanges } from "./ranges.ts";
import { createTalliesStore } from "./tallies.ts";
import { columnArray, unnestRows } from "./unnest-rows.ts";

export type { HealthOutcome, HealthRow, IndexerRole } from "./health.ts";
export type {
  DueReadFailure,
  MetadataUpdate,
  PostponedReadFailure,
  ReadFailureListing,
  StoredMetadata,
} from "./metadata.ts";
export type { CitizenKeyRow } from "./projection.ts";

type Executor = Database | Transaction;
export type Checkpoint = typeof indexerCheckpoints.$inferSelect;

/** The checkpoint belongs to another staker or chain than the one configured. */
export class CheckpointMismatch extends Error {
  override name = "CheckpointMismatch";
}

/**
 * A write claimed a hash for a block that differs from the stored one: one of the two was
 * fetched from a branch a reorg has since replaced. `reorg/divergence.ts` asks the chain which.
 */
export class LinkConflict extends Error {
  override name = "LinkConflict";
  constructor(
    readonly block: bigint,
    readonly stored: string,
    readonly claimed: string,
  ) {
    super(`block ${block} is ${stored} in the tables but this fetch saw ${claimed}`);
  }
}

/** A write meant to extend the checkpoint found it moved (another follower got there first). */
export class CheckpointMoved extends Error {
  override name = "CheckpointMoved";
}

/** What one fetched block range adds to the tables. */
export interface RangeWrite {
  fromBlock: bigint;
  toBlock: bigint;
  events: StakerEventRow[];
  stakes: CitizenStakeRow[];
  /** Citizens the fetch read (new to the tables when it looked); known ones are not sent again. */
  citizens: CitizenRow[];
  /**
   * The hash of every block the fetch saw: its first block's parent (fromBlock - 1), its last
   * block, the blocks with logs, and near the head every block of the range.
   */
  blockHashes: Map<bigint, string>;
  /** Citizens whose metadata could not be read (served with the fallback name). */
  readFailures: ReadFailureRow[];
}

/** Hashes kept below the checkpoint; older ones are pruned (reorgs that deep stop the follower). */
export const HASHES_KEPT = 256n;

/**
 * What the indexer keeps in Postgres, and the only way it changes it. Writes, rollback and the
 * checkpoint are built here; the health records (`health.ts`), the citizen metadata and read
 * failures (`metadata.ts`) and the counts for `status` (`tallies.ts`) in their own modules.
 */
export interface IndexerStore {
  checkpoint(): Promise<Checkpoint | undefined>;
  ensureCheckpoint(staker: string, chainId: number, startBlock: bigint): Promise<Checkpoint>;
  /**
   * Writes a fetched range idempotently and moves the checkpoint over every range now
   * contiguous. With `extendsCheckpoint` (the follower) the range must start right above it.
   * Throws LinkConflict when a claimed hash differs from a stored one.
   */
  writeRange(write: RangeWrite, options?: { extendsCheckpoint?: boolean }): Promise<Indexed>;
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

export interface InferredHandClaim {
  blockNumber: bigint;
  logIndex: number;
  transactionHash: string;
  citizenId: bigint;
  /** How many S1 stakes of this citizen its transaction made before it. */
  occurrence: number;
  vaultMultiplier: bigint;
}

/** An S1 stake whose figures do not give its points, as stored (the end of its block's). */
export type InferredConfiguration = Pick<
  CitizenStakeRow,
  | "blockNumber"
  | "logIndex"
  | "citizenId"
  | "creditYield"
  | "identityPoints"
  | "vaultMultiplier"
  | "timelockMultiplier"
  | "basePoints"
>;

export interface Indexed {
  indexedBlock: bigint;
}

export function createIndexerStore(db: Database): IndexerStore {
  const locked = <T>(work: (tx: Transaction) => Promise<T>) =>
    db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('citizen-staking:index'))`);
      return work(tx);
    });

  async function checkpoint(executor: Executor = db) {
    const [row] = await executor.select().from(indexerCheckpoints).limit(1);
    return row;
  }

  async function ensureCheckpoint(staker: string, chainId: number, startBlock: bigint) {
    return locked(async (tx) => {
      const existing = await checkpoint(tx);
      if (existing) {
        if (existing.staker !== staker.toLowerCase() || existing.chainId !== chainId) {
          throw new CheckpointMismatch(
            `this database indexes staker ${existing.staker} on chain ${existing.chainId}, not ${staker.toLowerCase()} on chain ${chainId}`,
          );
        }
        return existing;
      }
      const [created] = await tx
        .insert(indexerCheckpoints)
        .values({
          staker: staker.toLowerCase(),
          chainId,
          indexedBlock: startBlock - 1n,
          scheduledBlock: startBlock - 1n,
        })
        .returning();
      return created!;
    });
  }

  /**
   * Stores the write's hash claims and fails on the first that differs from a stored one.
   * `do update set hash = blocks.hash` changes nothing but returns the row that won, waiting
   * for a concurrent writer of the same number, so no lock is needed to see a conflict.
   */
  async function claimHashes(tx: Transaction, hashes: Map<bigint, string>) {
    if (hashes.size === 0) return;
    // In block order (unnest keeps it), so two writers claiming the same blocks lock them in
    // the same order.
    const claims = [...hashes]
      .map(([number, hash]) => ({ number, hash }))
      .sort((a, b) => (a.number < b.number ? -1 : 1));
    const stored = await tx
      .insert(blocks)
      .select(unnestRows(blocks, claims))
      .onConflictDoUpdate({ target: blocks.number, set: { hash: sql.raw(`"blocks"."hash"`) } })
      .returning();
    for (const row of stored) {
      const claimed = hashes.get(row.number)!;
      if (row.hash !== claimed) throw new LinkConflict(row.number, row.hash, claimed);
    }
  }

  /** Each table's rows in one statement (see unnest-rows.ts); a retried range changes nothing. */
  async function writeRows(tx: Transaction, write: RangeWrite) {
    await claimHashes(tx, write.blockHashes);
    if (write.events.length > 0) {
      await tx
        .insert(stakerEvents)
        .select(unnestRows(stakerEvents, write.events))
        .onConflictDoNothing();
    }
    if (write.citizens.length > 0) {
      // In key order, so two writers inserting the same citizens lock them in the same order.
      const citizenRows = [...write.citizens].sort((a, b) =>
        a.season !== b.season ? a.season - b.season : a.citizenId < b.citizenId ? -1 : 1,
      );
      await tx.insert(citizens).select(unnestRows(citizens, citizenRows)).onConflictDoNothing();
    }
    if (write.stakes.length > 0) {
      await tx
        .insert(citizenStakes)
        .select(unnestRows(citizenStakes, write.stakes))
        .onConflictDoNothing();
    }
    if (write.readFailures.length > 0) {
      await tx
        .insert(readFailures)
        .select(unnestRows(readFailures, write.readFailures))
        .onConflictDoUpdate({
          target: [readFailures.season, readFailures.citizenId, readFailures.read],
          set: {
            reason: sql`excluded.reason`,
            blockNumber: sql`excluded.block_number`,
            recordedAt: sql`now()`,
          },
        });
    }
  }

  async function recordRange(tx: Transaction, range: BlockRange) {
    await tx
      .insert(indexedRanges)
      .values({ fromBlock: range.from, toBlock: range.to })
      .onConflictDoUpdate({
        target: indexedRanges.fromBlock,
        set: { toBlock: sql`greatest(${indexedRanges.toBlock}, excluded.to_block)` },
      });
  }

  async function writeRange(
    write: RangeWrite,
    options: { extendsCheckpoint?: boolean } = {},
  ): Promise<Indexed> {
    if (options.extendsCheckpoint) {
      return locked(async (tx) => {
        const current = (await checkpoint(tx))!;
        if (current.indexedBlock !== write.fromBlock - 1n) {
          throw new CheckpointMoved(
            `the checkpoint is at ${current.indexedBlock}, not ${write.fromBlock - 1n}`,
          );
        }
        await writeRows(tx, write);
        await recordRange(tx, { from: write.fromBlock, to: write.toBlock });
        return { indexedBlock: await advance(tx) };
      });
    }
    // Chunk writes run side by side: rows are keyed by chain position and hash claims wait on
    // each other row by row, so no lock is needed. Only the short step that moves the
    // checkpoint over contiguous ranges (and projects them) takes the lock.
    await db.transaction(async (tx) => {
      await writeRows(tx, write);
      await recordRange(tx, { from: write.fromBlock, to: write.toBlock });
    });
    return locked(async (tx) => ({ indexedBlock: await advance(tx) }));
  }

  async function replaceRange(write: RangeWrite): Promise<Indexed> {
    return locked(async (tx) => {
      const current = (await checkpoint(tx))!;
      const inRange = and(
        gt(stakerEvents.blockNumber, write.fromBlock - 1n),
        lte(stakerEvents.blockNumber, write.toBlock),
      );
      const before = await tx
        .selectDistinct({ season: stakerEvents.citizenSeason, citizenId: stakerEvents.citizenId })
        .from(stakerEvents)
        .where(and(inRange, isNotNull(stakerEvents.citizenId)));
      await truncateHistory(tx, write.fromBlock - 1n);
      await tx.delete(stakerEvents).where(inRange);
      await writeRows(tx, write);
      await projectHistory(tx, write.fromBlock - 1n, current.indexedBlock);
      if (write.toBlock > current.indexedBlock) {
        await recordRange(tx, { from: write.fromBlock, to: write.toBlock });
      }
      const touched = [
        ...(before as CitizenKeyRow[]),
        ...write.events
          .filter((event) => event.citizenId != null)
          .map((event) => ({ season: event.citizenSeason!, citizenId: event.citizenId! })),
      ];
      await recompute(tx, touched, current.indexedBlock);
      await markDataChanged(tx);
      return { indexedBlock: await advance(tx) };
    });
  }

  /**
   * The checkpoint's updated_at is the served data's version (the API's ETags): a rewrite that
   * does not move the indexed block must still change it.
   */
  async function markDataChanged(tx: Transaction) {
    await tx.update(indexerCheckpoints).set({ updatedAt: sql`now()` });
  }

  /** Moves the checkpoint over contiguous written ranges and projects the citizens they touch. */
  async function advance(tx: Transaction): Promise<bigint> {
    const current = (await checkpoint(tx))!;
    const ranges = await tx.select().from(indexedRanges).orderBy(asc(indexedRanges.fromBlock));
    const reached = contiguousEnd(
      current.indexedBlock,
      ranges.map((range) => ({ from: range.fromBlock, to: range.toBlock })),
    );
    if (reached === current.indexedBlock) return reached;
    const touched = await tx
      .selectDistinct({ season: stakerEvents.citizenSeason, citizenId: stakerEvents.citizenId })
      .from(stakerEvents)
      .where(
        and(
          gt(stakerEvents.blockNumber, current.indexedBlock),
          lte(stakerEvents.blockNumber, reached),
          isNotNull(stakerEvents.citizenId),
        ),
      );
    await projectHistory(tx, current.indexedBlock, reached);
    await tx.delete(indexedRanges).where(lte(indexedRanges.toBlock, reached));
    await tx.delete(blocks).where(sql`${blocks.number} < ${reached - HASHES_KEPT}`);
    await tx
      .update(indexerCheckpoints)
      .set({
        indexedBlock: reached,
        scheduledBlock: sql`greatest(${indexerCheckpoints.scheduledBlock}, ${reached})`,
        updatedAt: sql`now()`,
      })
      .where(eq(indexerCheckpoints.staker, current.staker));
    await recompute(tx, touched as CitizenKeyRow[], reached);
    return reached;
  }

  async function rollbackTo(ancestor: bigint): Promise<{ removedEvents: number }> {
    return locked(async (tx) => {
      const current = (await checkpoint(tx))!;
      const touched = await tx
        .selectDistinct({ season: stakerEvents.citizenSeason, citizenId: stakerEvents.citizenId })
        .from(stakerEvents)
        .where(and(gt(stakerEvents.blockNumber, ancestor), isNotNull(stakerEvents.citizenId)));
      await truncateHistory(tx, ancestor);
      const removed = await tx
        .delete(stakerEvents)
        .where(gt(stakerEvents.blockNumber, ancestor))
        .returning({ blockNumber: stakerEvents.blockNumber });
      await tx.delete(blocks).where(gt(blocks.number, ancestor));
      await tx.delete(indexedRanges).where(gt(indexedRanges.fromBlock, ancestor));
      await tx
        .update(indexedRanges)
        .set({ toBlock: ancestor })
        .where(gt(indexedRanges.toBlock, ancestor));
      const indexedBlock = current.indexedBlock < ancestor ? current.indexedBlock : ancestor;
      await tx
        .update(indexerCheckpoints)
        .set({
          indexedBlock,
          // Ranges still scheduled for chunk jobs stay scheduled: the lost-work check queues
          // what the rollback removed. Otherwise the follower continues from the ancestor.
          scheduledBlock: sql`case when ${indexerCheckpoints.scheduledBlock} > ${current.indexedBlock} then ${indexerCheckpoints.scheduledBlock} else least(${indexerCheckpoints.scheduledBlock}, ${ancestor}) end`,
          updatedAt: sql`now()`,
        })
        .where(eq(indexerCheckpoints.staker, current.staker));
      await recompute(tx, touched as CitizenKeyRow[], indexedBlock);
      return { removedEvents: removed.length };
    });
  }

  async function recentBlocks(at: bigint, limit: number) {
    return db
      .select()
      .from(blocks)
      .where(lte(blocks.number, at))
      .orderBy(desc(blocks.number))
      .limit(limit);
  }

  async function storedHash(number: bigint) {
    const [row] = await db.select().from(blocks).where(eq(blocks.number, number));
    return row?.hash;
  }

  async function eventBlocks(at: bigint) {
    return db
      .selectDistinct({ number: stakerEvents.blockNumber, hash: stakerEvents.blockHash })
      .from(stakerEvents)
      .where(lte(stakerEvents.blockNumber, at))
      .orderBy(asc(stakerEvents.blockNumber));
  }

  async function markScheduled(expected: bigint, to: bigint): Promise<boolean> {
    const updated = await db
      .update(indexerCheckpoints)
      .set({ scheduledBlock: to, updatedAt: sql`now()` })
      .where(eq(indexerCheckpoints.scheduledBlock, expected))
      .returning({ scheduledBlock: indexerCheckpoints.scheduledBlock });
    return updated.length > 0;
  }

  async function raiseScheduled(to: bigint) {
    await db
      .update(indexerCheckpoints)
      .set({ scheduledBlock: sql`greatest(${indexerCheckpoints.scheduledBlock}, ${to})` });
  }

  async function countEvents(from: bigint, to: bigint) {
    const [row] = await db
      .select({ count: sql<number>`count(*)::int` })
      .from(stakerEvents)
      .where(and(gt(stakerEvents.blockNumber, from - 1n), lte(stakerEvents.blockNumber, to)));
    return row?.count ?? 0;
  }

  async function missing(): Promise<BlockRange[]> {
    const current = await checkpoint();
    if (!current) return [];
    const done = await db.select().from(indexedRanges);
    return missingRanges(
      current.indexedBlock,
      current.scheduledBlock,
      done.map((range) => ({ from: range.fromBlock, to: range.toBlock })),
    );
  }

  async function knownCitizens(keys: CitizenKeyRow[]) {
    if (keys.length === 0) return [];
    // Two array parameters, not one per citizen (a backfill chunk asks for thousands).
    const seasons = columnArray(
      citizens.season,
      keys.map((key) => key.season),
    );
    const ids = columnArray(
      citizens.citizenId,
      keys.map((key) => key.citizenId),
    );
    return db
      .select()
      .from(citizens)
      .where(
        sql`(${citizens.season}, ${citizens.citizenId}) in (select * from unnest(${seasons}, ${ids}))`,
      );
  }

  const health = createHealthStore(db);
  const metadata = createMetadataStore(db, { locked, checkpoint, markDataChanged });
  const tallies = createTalliesStore(db);

  async function reproject() {
    return locked(async (tx) => {
      const current = (await checkpoint(tx))!;
      const keys = await tx
        .selectDistinct({ season: stakerEvents.citizenSeason, citizenId: stakerEvents.citizenId })
        .from(stakerEvents)
        .where(
          and(
            isNotNull(stakerEvents.citizenId),
            lte(stakerEvents.blockNumber, current.indexedBlock),
          ),
        );
      await tx.delete(stakedCitizensHistory);
      await projectHistory(tx, -1n, current.indexedBlock);
      await tx.delete(stakedCitizens);
      await recompute(tx, keys as CitizenKeyRow[], current.indexedBlock);
      await markDataChanged(tx);
      const [rows] = await tx.select({ n: count() }).from(stakedCitizens);
      return { citizens: rows?.n ?? 0, indexedBlock: current.indexedBlock };
    });
  }

  async function recordFinalized(block: bigint) {
    await db
      .update(indexerCheckpoints)
      .set({ finalizedBlock: block })
      .where(sql`coalesce(${indexerCheckpoints.finalizedBlock}, -1) < ${block}`);
  }

  async function inferredHandClaims(): Promise<InferredHandClaim[]> {
    const earlier = sql`(
      select count(*)::int from ${stakerEvents} e
      where e.transaction_hash = ${stakerEvents.transactionHash}
        and e.block_number = ${stakerEvents.blockNumber}
        and e.event = 'Stake' and e.asset_type = 's1_citizen'
        and e.citizen_id = ${stakerEvents.citizenId}
        and e.log_index < ${stakerEvents.logIndex}
    )`;
    const rows = await db
      .select({
        blockNumber: citizenStakes.blockNumber,
        logIndex: citizenStakes.logIndex,
        transactionHash: stakerEvents.transactionHash,
        citizenId: citizenStakes.citizenId,
        occurrence: sql<number>`${earlier}`.mapWith(Number),
        vaultMultiplier: citizenStakes.vaultMultiplier,
      })
      .from(citizenStakes)
      .innerJoin(
        stakerEvents,
        and(
          eq(stakerEvents.blockNumber, citizenStakes.blockNumber),
          eq(stakerEvents.logIndex, citizenStakes.logIndex),
        ),
      )
      .where(eq(citizenStakes.handClaimSource, "inferred"))
      .orderBy(asc(citizenStakes.blockNumber), asc(citizenStakes.logIndex));
    return rows.map((row) => ({ ...row, vaultMultiplier: row.vaultMultiplier ?? 0n }));
  }

  async function inferredConfigurations(): Promise<InferredConfiguration[]> {
    return db
      .select({
        blockNumber: citizenStakes.blockNumber,
        logIndex: citizenStakes.logIndex,
        citizenId: citizenStakes.citizenId,
        creditYield: citizenStakes.creditYield,
        identityPoints: citizenStakes.identityPoints,
        vaultMultiplier: citizenStakes.vaultMultiplier,
        timelockMultiplier: citizenStakes.timelockMultiplier,
        basePoints: citizenStakes.basePoints,
      })
      .from(citizenStakes)
      .where(eq(citizenStakes.configurationSource, "inferred"))
      .orderBy(asc(citizenStakes.blockNumber), asc(citizenStakes.logIndex));
  }

  async function settleHandClaim(
    stake: { blockNumber: bigint; logIndex: number },
    settled: { claim: boolean; vaultMultiplier: bigint },
  ): Promise<boolean> {
    return locked(async (tx) => {
      const updated = await tx
        .update(citizenStakes)
        .set({
          handClaim: settled.claim,
          handClaimSource: "trace",
          vaultMultiplier: settled.vaultMultiplier,
        })
        .where(
          and(
            eq(citizenStakes.blockNumber, stake.blockNumber),
            eq(citizenStakes.logIndex, stake.logIndex),
            eq(citizenStakes.handClaimSource, "inferred"),
          ),
        )
        .returning({ season: citizenStakes.season, citizenId: citizenStakes.citizenId });
      if (updated.length === 0) return false;
      await recompute(tx, updated, (await checkpoint(tx))!.indexedBlock);
      await markDataChanged(tx);
      return true;
    });
  }

  return {
    checkpoint: () => checkpoint(),
    ensureCheckpoint,
    writeRange,
    replaceRange,
    rollbackTo,
    recentBlocks,
    storedHash,
    eventBlocks,
    markScheduled,
    raiseScheduled,
    countEvents,
    missingRanges: missing,
    knownCitizens,
    ...health,
    ...metadata,
    reproject,
    ...tallies,
    recordFinalized,
    inferredHandClaims,
    inferredConfigurations,
    settleHandClaim,
  };
}
