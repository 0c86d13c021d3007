/**
 * The store's citizen metadata: names and images read again at the head, and the read failures
 * recorded for them, with their retries. Part of `IndexerStore` (declared in index.ts); built
 * alone from a database handle and the writers' lock it shares with the range writes.
 */
import { and, asc, eq, getTableColumns, lte, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { citizens, type ReadFailureRow, readFailures } from "../../db/schema.ts";
import type { WriterDeps } from "./checkpoint.ts";
import { type CitizenKeyRow, recompute } from "./projection.ts";

/** A name and image read at the head: written, and any recorded failure of the citizen cleared. */
export interface MetadataUpdate {
  season: number;
  citizenId: bigint;
  name: string | null;
  image: string | null;
}

/** A recorded read failure, with what the citizen is served meanwhile. */
export type ReadFailureListing = typeof readFailures.$inferSelect & {
  /**
   * The stored name and image: read before the tokenURI stopped reading (kept by rule), or both
   * null when it never read (the fallback name is served).
   */
  name: string | null;
  image: string | null;
};

export interface StoredMetadata {
  season: number;
  citizenId: bigint;
  name: string | null;
  image: string | null;
  /** A read failure is recorded for the citizen's metadata. */
  failing: boolean;
}

export interface DueReadFailure extends StoredMetadata {
  /** Retries that failed since the failure was recorded. */
  attempts: number;
}

export interface PostponedReadFailure extends CitizenKeyRow {
  reason: string;
  blockNumber: bigint;
  attempts: number;
  retryAt: Date;
}

export function createMetadataStore(
  db: Database,
  { locked, checkpoint, markDataChanged }: WriterDeps,
) {
  async function updateMetadata(rows: MetadataUpdate[]) {
    if (rows.length === 0) return;
    // Under the writers' lock: a projection at a checkpoint read here must not land after a
    // follower's write that moved it (the follower refreshes metadata while it indexes).
    await locked(async (tx) => {
      for (const row of rows) {
        const key = (table: typeof citizens | typeof readFailures) =>
          and(eq(table.season, row.season), eq(table.citizenId, row.citizenId));
        await tx.update(citizens).set({ name: row.name, image: row.image }).where(key(citizens));
        await tx.delete(readFailures).where(key(readFailures));
      }
      await recompute(tx, rows, (await checkpoint(tx))!.indexedBlock);
      await markDataChanged(tx);
    });
  }

  /**
   * Records tokenURIs that do not read, leaving the citizens' stored name and image as they are
   * (the project's rule: a tokenURI that stops reading keeps the last readable ones), so the
   * served data and its version do not change; `read-failures`, `status` and the metrics show
   * them. A failure already recorded gets the new reason and block.
   */
  async function recordReadFailures(rows: ReadFailureRow[]) {
    if (rows.length === 0) return;
    await db
      .insert(readFailures)
      .values(rows)
      .onConflictDoUpdate({
        target: [readFailures.season, readFailures.citizenId, readFailures.read],
        set: {
          reason: sql`excluded.reason`,
          blockNumber: sql`excluded.block_number`,
          recordedAt: sql`now()`,
        },
      });
  }

  async function listReadFailures(): Promise<ReadFailureListing[]> {
    return db
      .select({ ...getTableColumns(readFailures), name: citizens.name, image: citizens.image })
      .from(readFailures)
      .leftJoin(
        citizens,
        and(
          eq(citizens.season, readFailures.season),
          eq(citizens.citizenId, readFailures.citizenId),
        ),
      )
      .orderBy(asc(readFailures.season), asc(readFailures.citizenId), asc(readFailures.read));
  }

  async function storedMetadata(
    after: CitizenKeyRow | undefined,
    limit: number,
  ): Promise<StoredMetadata[]> {
    const rows = await db
      .select({
        season: citizens.season,
        citizenId: citizens.citizenId,
        name: citizens.name,
        image: citizens.image,
        failure: readFailures.read,
      })
      .from(citizens)
      .leftJoin(
        readFailures,
        and(
          eq(readFailures.season, citizens.season),
          eq(readFailures.citizenId, citizens.citizenId),
        ),
      )
      .where(
        after &&
          sql`(${citizens.season}, ${citizens.citizenId}) > (${after.season}, ${after.citizenId.toString()}::numeric)`,
      )
      .orderBy(asc(citizens.season), asc(citizens.citizenId))
      .limit(limit);
    return rows.map(({ failure, ...row }) => ({ ...row, failing: failure !== null }));
  }

  async function dueReadFailures(limit: number): Promise<DueReadFailure[]> {
    const rows = await db
      .select({
        season: citizens.season,
        citizenId: citizens.citizenId,
        name: citizens.name,
        image: citizens.image,
        attempts: readFailures.attempts,
      })
      .from(readFailures)
      .innerJoin(
        citizens,
        and(
          eq(citizens.season, readFailures.season),
          eq(citizens.citizenId, readFailures.citizenId),
        ),
      )
      .where(and(eq(readFailures.read, "tokenURI"), lte(readFailures.retryAt, sql`now()`)))
      .orderBy(asc(readFailures.retryAt))
      .limit(limit);
    return rows.map((row) => ({ ...row, failing: true }));
  }

  async function postponeReadFailures(rows: PostponedReadFailure[]) {
    if (rows.length === 0) return;
    await db.transaction(async (tx) => {
      for (const row of rows) {
        await tx
          .update(readFailures)
          .set({
            reason: row.reason,
            blockNumber: row.blockNumber,
            attempts: row.attempts,
            retryAt: row.retryAt,
          })
          .where(
            and(
              eq(readFailures.season, row.season),
              eq(readFailures.citizenId, row.citizenId),
              eq(readFailures.read, "tokenURI"),
            ),
          );
      }
    });
  }

  return {
    readFailures: listReadFailures,
    recordReadFailures,
    updateMetadata,
    storedMetadata,
    dueReadFailures,
    postponeReadFailures,
  };
}
