/**
 * The store's rewrites of what is stored: a rollback to a fork point (or an operator's), and a
 * projection rebuilt from the event log alone. Part of `IndexerStore` (declared in index.ts);
 * built from the writers' lock, under which both run.
 */
import { and, count, eq, gt, isNotNull, lte, sql } from "drizzle-orm";
import {
  blocks,
  indexedRanges,
  indexerCheckpoints,
  stakedCitizens,
  stakedCitizensHistory,
  stakerEvents,
} from "../../db/schema.ts";
import type { WriterDeps } from "./checkpoint.ts";
import { type CitizenKeyRow, projectHistory, recompute, truncateHistory } from "./projection.ts";

export function createRewrites({ locked, checkpoint, markDataChanged }: WriterDeps) {
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

  return { rollbackTo, reproject };
}
