import type { Logger } from "pino";
import type { PublicClient } from "viem";
import { readChainTip } from "../chain/finality.ts";
import type { FetchStage, LogCheck } from "../fetch/fetch-range.ts";
import { resolveLinkConflict } from "../reorg/divergence.ts";
import { type Indexed, type IndexerStore, LinkConflict, type RangeWrite } from "../store/index.ts";
import type { EventBudget } from "./event-budget.ts";
import type { createHeapCeiling } from "./heap-ceiling.ts";

export interface IndexRangeRequest {
  from: bigint;
  to: bigint;
  /** Replace what the tables hold for the range instead of adding to it (operator reindex). */
  replace?: boolean;
}

/** What a chunk job is handed: the fetch stage, the store and a node to ask. */
export type ChunkDeps = {
  fetch: FetchStage;
  /** Asked for the finality boundary when a write meets a hash conflict. */
  client: PublicClient;
  store: IndexerStore;
  log: Logger;
  finalityDepth?: number;
  /** The events this process's chunk jobs may work on at once. */
  eventBudget?: EventBudget;
  /** Collects the heap between slices when the process's memory is past its ceiling. */
  heapCeiling?: ReturnType<typeof createHeapCeiling>;
};

/**
 * A chunk job: fetches a block range and commits it in slices of blocks, each holding no more
 * events than the process's budget (a single block may hold more: nothing smaller exists) and
 * each written before the next is fetched, its events held until its rows are written. A slice is
 * fetched and written exactly as a chunk of its blocks would be, so a job stopped between two
 * slices leaves written ranges the checkpoint moves over, and its retry writes again what is
 * there already (rows keyed by chain position): see docs/decisions/sliced-chunks.md.
 */
export async function indexRange(deps: ChunkDeps, request: IndexRangeRequest) {
  const budget = deps.eventBudget;
  let [events, slices, collections] = [0, 0, 0];
  let indexed: Indexed | undefined;
  const logCheck: LogCheck = { askedAgain: 0, receiptsChecked: 0, corrected: 0, disputed: 0 };
  for (let from = request.from; from <= request.to; ) {
    const hold = budget?.hold();
    try {
      const write = await deps.fetch(
        { from, to: request.to },
        { admitEvents: hold?.admit, maxEvents: budget?.limit, logSpans: budget },
      );
      // The budget is let go once the rows are in, not after the checkpoint's move and
      // projection that follow (often over other slices' rows too): those need no events.
      indexed = await commitRange(deps, write, request.replace, hold?.release);
      events += write.events.length;
      slices++;
      for (const key of Object.keys(logCheck) as (keyof LogCheck)[]) {
        logCheck[key] += write.logCheck[key];
      }
      from = write.toBlock + 1n;
    } finally {
      hold?.release();
    }
    if (deps.heapCeiling?.settle()) collections++;
  }
  return { events, slices, collections, indexedBlock: indexed!.indexedBlock, logCheck };
}

/**
 * Writes a fetched range. One whose hashes do not link to the stored neighbours is never
 * committed: the chain says which side is stale, the stale stored side is removed, and the job
 * fails with RangeStale so its retry fetches the range again.
 */
export async function commitRange(
  deps: ChunkDeps,
  write: RangeWrite,
  replace = false,
  rowsWritten?: () => void,
): Promise<Indexed> {
  try {
    return replace
      ? await deps.store.replaceRange(write)
      : await deps.store.writeRange(write, { rowsWritten });
  } catch (error) {
    if (!(error instanceof LinkConflict)) throw error;
    const tip = await readChainTip(deps.client, deps.finalityDepth);
    return resolveLinkConflict(deps, error, tip.finalized);
  }
}
