/**
 * The store's range writes: what a fetched range adds, and the checkpoint moved over it. Part of
 * `IndexerStore` (declared in index.ts), built from a database handle and the writers' lock.
 * Chunk writes from any number of workers on any number of hosts run side by side; the
 * follower's writes and reindexes take the writers' lock and apply one at a time.
 *
 * Every write that adds blocks proves it links to what is stored: it claims the hash of each
 * block it saw (its first block's parent, its last block, blocks with logs, or every block near
 * the head), and a claim that differs from a stored hash for the same number is a
 * `LinkConflict`, never an overwrite. Two ranges written out of order meet at the seam block
 * (one claims it as its last block, the other as its first block's parent), so the indexed
 * prefix the checkpoint walks over is one hash chain.
 */
import { and, gt, isNotNull, lte, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import {
  blocks,
  type CitizenRow,
  type CitizenStakeRow,
  citizenStakes,
  citizens,
  indexedRanges,
  type ReadFailureRow,
  readFailures,
  type StakerEventRow,
  stakerEvents,
} from "../../db/schema.ts";
import {
  advance,
  advanceOver,
  advanceStatements,
  asRange,
  rangesInOrder,
  readCheckpoint,
  recomputeStatements,
  touchedOf,
} from "./advance.ts";
import type { WriterDeps } from "./checkpoint.ts";
import {
  answerOf,
  endingWith,
  inOneFlight,
  type PreparedStatement,
  settleOneFlight,
} from "./flight.ts";
import {
  type CitizenKeyRow,
  projectHistory,
  recompute,
  type Transaction,
  truncateHistory,
} from "./projection.ts";
import { type BlockRange, contiguousEnd } from "./ranges.ts";
import { unnestRows } from "./unnest-rows.ts";

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

type BlockRow = typeof blocks.$inferSelect;

/** A settled statement's answer, or undefined when it failed. */
const answered = <R>(outcome: PromiseSettledResult<R> | undefined) =>
  outcome?.status === "fulfilled" ? outcome.value : undefined;

export interface Indexed {
  indexedBlock: bigint;
}

export interface WriteOptions {
  /** The follower's write: the range must start right above the checkpoint. */
  extendsCheckpoint?: boolean;
  /**
   * A chunk write's rows are committed: called before the checkpoint moves over them (which
   * waits for the writers' lock and projects), so the caller can let go of what it holds for
   * the rows (the event budget).
   */
  rowsWritten?: () => void;
}

export function createRangeWrites(
  db: Database,
  { locked, writersLock, checkpoint, markDataChanged }: WriterDeps,
) {
  /**
   * Stores the write's hash claims, unsent; `checkClaims` then fails on the first claim that
   * differs from a stored one. `do update set hash = blocks.hash` changes nothing but returns the
   * row that won, waiting for a concurrent writer of the same number, so no lock is needed to
   * see a conflict.
   */
  function claimStatement(tx: Transaction, hashes: Map<bigint, string>) {
    // In block order (unnest keeps it), so two writers claiming the same blocks lock them in
    // the same order.
    const claims = [...hashes]
      .map(([number, hash]) => ({ number, hash }))
      .sort((a, b) => (a.number < b.number ? -1 : 1));
    return tx
      .insert(blocks)
      .select(unnestRows(blocks, claims))
      .onConflictDoUpdate({ target: blocks.number, set: { hash: sql.raw(`"blocks"."hash"`) } })
      .returning()
      .prepare("claim_hashes");
  }

  function checkClaims(hashes: Map<bigint, string>, stored: BlockRow[]) {
    for (const row of stored) {
      const claimed = hashes.get(row.number)!;
      if (row.hash !== claimed) throw new LinkConflict(row.number, row.hash, claimed);
    }
  }

  /**
   * The write's hash claims and rows, each table's rows in one statement (see unnest-rows.ts),
   * unsent, the claims first; a retried range changes nothing.
   */
  function rowStatements(tx: Transaction, write: RangeWrite) {
    const statements: PreparedStatement[] = [];
    if (write.blockHashes.size > 0) statements.push(claimStatement(tx, write.blockHashes));
    if (write.events.length > 0) {
      statements.push(
        tx
          .insert(stakerEvents)
          .select(unnestRows(stakerEvents, write.events))
          .onConflictDoNothing()
          .prepare("insert_events"),
      );
    }
    if (write.citizens.length > 0) {
      // In key order, so two writers inserting the same citizens lock them in the same order.
      const citizenRows = [...write.citizens].sort((a, b) =>
        a.season !== b.season ? a.season - b.season : a.citizenId < b.citizenId ? -1 : 1,
      );
      statements.push(
        tx
          .insert(citizens)
          .select(unnestRows(citizens, citizenRows))
          .onConflictDoNothing()
          .prepare("insert_citizens"),
      );
    }
    if (write.stakes.length > 0) {
      statements.push(
        tx
          .insert(citizenStakes)
          .select(unnestRows(citizenStakes, write.stakes))
          .onConflictDoNothing()
          .prepare("insert_stakes"),
      );
    }
    if (write.readFailures.length > 0) {
      statements.push(
        tx
          .insert(readFailures)
          .select(unnestRows(readFailures, write.readFailures))
          .onConflictDoUpdate({
            target: [readFailures.season, readFailures.citizenId, readFailures.read],
            set: {
              reason: sql`excluded.reason`,
              blockNumber: sql`excluded.block_number`,
              recordedAt: sql`now()`,
            },
          })
          .prepare("insert_read_failures"),
      );
    }
    return statements;
  }

  /** The write's claims and rows in one flight (see extendCheckpoint); fails on a differing claim. */
  async function writeRows(tx: Transaction, write: RangeWrite) {
    const [claimed] = await inOneFlight(rowStatements(tx, write));
    if (write.blockHashes.size > 0) checkClaims(write.blockHashes, claimed as BlockRow[]);
  }

  function recordRange(tx: Transaction, range: BlockRange) {
    return tx
      .insert(indexedRanges)
      .values({ fromBlock: range.from, toBlock: range.to })
      .onConflictDoUpdate({
        target: indexedRanges.fromBlock,
        set: { toBlock: sql`greatest(${indexedRanges.toBlock}, excluded.to_block)` },
      })
      .prepare("record_range");
  }

  /**
   * The follower's write, in one flight after BEGIN and one with COMMIT. The first: the lock, the
   * checkpoint, the range's record, the ranges, the claims and rows, then the advance over this
   * range as if the checkpoint were still at its first block's parent (it is, unless another
   * follower got there first), and the touched citizens' rows read back. postgres.js sends a
   * transaction's statements back to back when they are not awaited one by one (unsent drizzle
   * queries only, since an async helper would send its query before the lock) and Postgres runs
   * them in that order, each with its own snapshot, so the checkpoint is still read under the
   * lock and the ranges after this range's record. What the flight found is checked after it: a
   * moved checkpoint or a differing claim throws (before any failure of the statements it
   * explains), and the rollback undoes what the flight wrote. The rows' records are written here,
   * and the rows go back with the COMMIT. See docs/decisions/follower-write-flight.md.
   */
  async function extendCheckpoint(write: RangeWrite): Promise<Indexed> {
    const after = write.fromBlock - 1n;
    return endingWith(db, async (tx) => {
      const rows = rowStatements(tx, write);
      const outcomes = await settleOneFlight([
        writersLock(tx),
        readCheckpoint(tx),
        recordRange(tx, { from: write.fromBlock, to: write.toBlock }),
        rangesInOrder(tx),
        ...rows,
        ...advanceStatements(tx, after, write.toBlock),
      ]);
      // A statement after a failed one fails only because the transaction is aborted: what the
      // checkpoint and the claims show is read where they were answered, else the first failure
      // (the cause) is thrown.
      const current = answered(outcomes[1])?.[0];
      if (current && current.indexedBlock !== after) {
        throw new CheckpointMoved(`the checkpoint is at ${current.indexedBlock}, not ${after}`);
      }
      const claimed = answered(outcomes[4]);
      if (claimed && write.blockHashes.size > 0) {
        checkClaims(write.blockHashes, claimed as BlockRow[]);
      }
      for (const outcome of outcomes) answerOf(outcome);
      const advanced = outcomes.slice(4 + rows.length).map(answerOf);
      const ranges = answerOf(outcomes[3]);
      const last = recomputeStatements(tx, touchedOf(advanced));
      const reached = contiguousEnd(after, ranges.map(asRange));
      if (reached === write.toBlock) return { value: { indexedBlock: reached }, last };
      // Written ranges beyond this one join it: the advance goes on over them.
      await inOneFlight(last);
      const beyond = ranges.filter((range) => range.toBlock > write.toBlock);
      return { value: { indexedBlock: await advanceOver(tx, write.toBlock, beyond) }, last: [] };
    });
  }

  async function writeRange(write: RangeWrite, options: WriteOptions = {}): Promise<Indexed> {
    if (options.extendsCheckpoint) return extendCheckpoint(write);
    // Chunk writes run side by side: rows are keyed by chain position and hash claims wait on
    // each other row by row, so no lock is needed. Only the step that moves the checkpoint over
    // contiguous ranges (and projects them) takes the lock, and it needs none of the rows.
    await db.transaction(async (tx) => {
      await writeRows(tx, write);
      await recordRange(tx, { from: write.fromBlock, to: write.toBlock }).execute();
    });
    options.rowsWritten?.();
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
        await recordRange(tx, { from: write.fromBlock, to: write.toBlock }).execute();
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

  return { writeRange, replaceRange };
}
