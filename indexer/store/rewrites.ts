/**
 * The store's rewrites of what is stored: a rollback to a fork point (or an operator's), and a
 * projection rebuilt from the event log alone. Part of `IndexerStore` (declared in index.ts);
 * built from the writers' lock, under which both run.
 */
import { and, count, eq, gt, isNotNull, lte, sql } from "drizzle-orm";
import { RECORD_WRITER, storedRecord } from "../../api/modules/citizens/record.ts";
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

  /**
   * Writes again every stored API record another writer wrote (a deployment that changed the
   * record, or a row whose record a change by hand dropped), from the row's own columns, with
   * this writer: until then the API renders those rows, which is right but slower. Under the
   * writers' lock, so no row changes between its reading and its record's write; the answers do
   * not change, so the data's version does not move.
   */
  async function refillRecords(): Promise<number> {
    return locked(async (tx) => {
      const stale = await tx
        .select()
        .from(stakedCitizens)
        .where(sql`${stakedCitizens.recordWriter} is distinct from ${RECORD_WRITER}`);
      if (stale.length === 0) return 0;
      const records = stale.map((row) => ({
        season: row.season,
        citizen_id: row.citizenId.toString(),
        ...storedRecord(row),
      }));
      await tx.execute(sql`
        update staked_citizens s set record = r.record, record_writer = r."recordWriter"
        from jsonb_to_recordset(${JSON.stringify(records)}::jsonb)
          as r(season smallint, citizen_id numeric, record text, "recordWriter" text)
        where s.season = r.season and s.citizen_id = r.citizen_id
      `);
      return stale.length;
    });
  }

  return { rollbackTo, reproject, refillRecords };
}
