/**
 * The checkpoint's advance: the move over contiguous written ranges, under the writers' lock, and
 * the projection of the citizens the blocks touched (their history, then their staked_citizens
 * rows with the API's records). Statements are built unsent, so a writer can send them in its own
 * flight (range-writes.ts: the follower's write sends them with its rows).
 */
import { asc, eq, lte, sql } from "drizzle-orm";
import { blocks, indexedRanges, indexerCheckpoints } from "../../db/schema.ts";
import { inOneFlight, type PreparedStatement, preparedSql } from "./flight.ts";
import {
  projectHistoryStatement,
  recomputeWriteStatement,
  type Transaction,
  touchedKeys,
  touchedRowsStatement,
  withRecords,
} from "./projection.ts";
import { type BlockRange, contiguousEnd } from "./ranges.ts";

/** Hashes kept below the checkpoint; older ones are pruned (reorgs that deep stop the follower). */
export const HASHES_KEPT = 256n;

export type IndexedRangeRow = typeof indexedRanges.$inferSelect;
/** A row of touchedKeys, as the driver gives it. */
type TouchedKey = { citizen_season: number; citizen_id: string };

export const asRange = (range: IndexedRangeRow): BlockRange => ({
  from: range.fromBlock,
  to: range.toBlock,
});

export const readCheckpoint = (tx: Transaction) =>
  tx.select().from(indexerCheckpoints).limit(1).prepare("read_checkpoint");
export const rangesInOrder = (tx: Transaction) =>
  tx.select().from(indexedRanges).orderBy(asc(indexedRanges.fromBlock)).prepare("read_ranges");

/** Moves the checkpoint over contiguous written ranges and projects the citizens they touch. */
export async function advance(tx: Transaction): Promise<bigint> {
  const [[current], ranges] = await inOneFlight([readCheckpoint(tx), rangesInOrder(tx)]);
  return advanceOver(tx, current!.indexedBlock, ranges);
}

/**
 * advance from the checkpoint `from` and the written ranges read under the lock: the move and
 * projection in one flight, with the rows of the citizens the blocks touched, then those rows
 * written back with their records.
 */
export async function advanceOver(
  tx: Transaction,
  from: bigint,
  ranges: IndexedRangeRow[],
): Promise<bigint> {
  const reached = contiguousEnd(from, ranges.map(asRange));
  if (reached === from) return reached;
  const advanced = await inOneFlight(advanceStatements(tx, from, reached));
  await inOneFlight(recomputeStatements(tx, touchedOf(advanced)));
  return reached;
}

/**
 * The checkpoint's move from `from` to `reached`, unsent: the touched citizens, the projection,
 * the ranges and hashes left behind, the move itself (only from `from`: a checkpoint found
 * elsewhere stays), then the touched citizens' rows at `reached` (touchedRowsStatement).
 * touchedOf reads its answers.
 */
export function advanceStatements(tx: Transaction, from: bigint, reached: bigint) {
  return [
    preparedSql(tx, touchedKeys(from, reached), "touched_citizens"),
    preparedSql(tx, projectHistoryStatement(from, reached), "project_history"),
    tx.delete(indexedRanges).where(lte(indexedRanges.toBlock, reached)).prepare("delete_ranges"),
    tx
      .delete(blocks)
      .where(sql`${blocks.number} < ${reached - HASHES_KEPT}`)
      .prepare("prune_hashes"),
    tx
      .update(indexerCheckpoints)
      .set({
        indexedBlock: reached,
        scheduledBlock: sql`greatest(${indexerCheckpoints.scheduledBlock}, ${reached})`,
        updatedAt: sql`now()`,
      })
      .where(eq(indexerCheckpoints.indexedBlock, from))
      .prepare("advance_checkpoint"),
    preparedSql(tx, touchedRowsStatement(from, reached), "touched_rows"),
  ] as const;
}

/** The touched citizens and their rows, from the answers to advanceStatements. */
export function touchedOf(answers: readonly unknown[]) {
  const keys = (answers[0] as TouchedKey[]).map((key) => ({
    season: key.citizen_season,
    citizenId: BigInt(key.citizen_id),
  }));
  return { keys, rows: answers[5] as Record<string, unknown>[] };
}

/** The touched citizens' rows written back with their records (none when none was touched). */
export function recomputeStatements(
  tx: Transaction,
  touched: ReturnType<typeof touchedOf>,
): PreparedStatement[] {
  if (touched.keys.length === 0) return [];
  const rows = withRecords(touched.rows);
  return [preparedSql(tx, recomputeWriteStatement(touched.keys, rows), "recompute_rows")];
}
