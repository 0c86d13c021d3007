/**
 * The store's checkpoint: where indexing stands (indexed, scheduled and finalized blocks), the
 * writers' advisory lock, and the served data's version. Part of `IndexerStore` (declared in
 * index.ts); built alone from a database handle. The other writers take its `WriterDeps`.
 */
import { eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { indexedRanges, indexerCheckpoints } from "../../db/schema.ts";
import type { Transaction } from "./projection.ts";
import { type BlockRange, missingRanges } from "./ranges.ts";

type Executor = Database | Transaction;
export type Checkpoint = typeof indexerCheckpoints.$inferSelect;

/** What every writer shares: one lock, one checkpoint, one version of the served data. */
export interface WriterDeps {
  /** Runs `work` in a transaction under the writers' advisory lock. */
  locked: <T>(work: (tx: Transaction) => Promise<T>) => Promise<T>;
  /**
   * The statement that takes the writers' lock (until the transaction ends), unsent: for a
   * writer that sends it first in one flight with its own statements (range-writes.ts).
   */
  writersLock: (tx: Transaction) => ReturnType<Transaction["execute"]>;
  checkpoint: (tx: Transaction) => Promise<Checkpoint | undefined>;
  /** Moves the served data's version (the API's ETags). */
  markDataChanged: (tx: Transaction) => Promise<void>;
}

/** The checkpoint belongs to another staker or chain than the one configured. */
export class CheckpointMismatch extends Error {
  override name = "CheckpointMismatch";
}

export function createCheckpointStore(db: Database) {
  const writersLock = (tx: Transaction) =>
    tx.execute(sql`select pg_advisory_xact_lock(hashtext('citizen-staking:index'))`);
  const locked = <T>(work: (tx: Transaction) => Promise<T>) =>
    db.transaction(async (tx) => {
      await writersLock(tx);
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
   * The checkpoint's updated_at is the served data's version (the API's ETags): a rewrite that
   * does not move the indexed block must still change it.
   */
  async function markDataChanged(tx: Transaction) {
    await tx.update(indexerCheckpoints).set({ updatedAt: sql`now()` });
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

  async function recordFinalized(block: bigint) {
    await db
      .update(indexerCheckpoints)
      .set({ finalizedBlock: block })
      .where(sql`coalesce(${indexerCheckpoints.finalizedBlock}, -1) < ${block}`);
  }

  const writer: WriterDeps = { locked, writersLock, checkpoint, markDataChanged };
  return {
    writer,
    checkpoint: () => checkpoint(),
    ensureCheckpoint,
    markScheduled,
    raiseScheduled,
    missingRanges: missing,
    recordFinalized,
  };
}
