import type { Logger } from "pino";
import type { PublicClient } from "viem";
import { readChainTip } from "../chain/finality.ts";
import type { FetchStage } from "../fetch/fetch-range.ts";
import { resolveLinkConflict } from "../reorg/divergence.ts";
import { type Indexed, type IndexerStore, LinkConflict, type RangeWrite } from "../store/index.ts";
import type { EventBudget } from "./event-budget.ts";

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
};

/** A chunk job: fetches a block range and commits it, its events held until it is written. */
export async function indexRange(deps: ChunkDeps, request: IndexRangeRequest) {
  const hold = deps.eventBudget?.hold();
  try {
    const write = await deps.fetch(request, { admitEvents: hold?.admit });
    const result = await commitRange(deps, write, request.replace);
    return {
      events: write.events.length,
      indexedBlock: result.indexedBlock,
      logCheck: write.logCheck,
    };
  } finally {
    hold?.release();
  }
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
): Promise<Indexed> {
  try {
    return replace ? await deps.store.replaceRange(write) : await deps.store.writeRange(write);
  } catch (error) {
    if (!(error instanceof LinkConflict)) throw error;
    const tip = await readChainTip(deps.client, deps.finalityDepth);
    return resolveLinkConflict(deps, error, tip.finalized);
  }
}
