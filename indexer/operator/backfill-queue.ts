/**
 * The backfill queue: an operator's block range turned into chunk jobs for the chunk workers,
 * checked against the checkpoint (no gap) and the finality boundary (the follower's blocks).
 * Takes its dependencies, so it can be built alone.
 */
import type { PublicClient } from "viem";
import type { StakerContracts } from "../chain/contracts.ts";
import { readChainTip } from "../chain/finality.ts";
import { enqueueRange, type Queues } from "../queues/queues.ts";
import type { IndexerStore } from "../store/index.ts";

export class BackfillLeavesGap extends Error {
  override name = "BackfillLeavesGap";
}

/** A backfill asked for blocks above the finality boundary, which only the follower indexes. */
export class RangeAboveFinality extends Error {
  override name = "RangeAboveFinality";
}

export interface BackfillQueueDeps {
  client: PublicClient;
  store: IndexerStore;
  contracts: StakerContracts;
  queues: Queues;
  chainId: number;
  chunkSize: number;
  finalityDepth?: number;
}

export function createBackfillQueue(deps: BackfillQueueDeps) {
  const { client, store, contracts, queues, chainId, chunkSize, finalityDepth } = deps;
  return {
    /**
     * Queues chunk jobs for [from, to]: from defaults to just past the checkpoint (or
     * `startBlock` on a fresh database), to to the finality boundary. Blocks above the boundary
     * belong to the follower, which indexes them block by block.
     */
    async enqueue(range: { from?: bigint; to?: bigint; startBlock: bigint }) {
      const existing = await store.checkpoint();
      const from = range.from ?? (existing ? existing.indexedBlock + 1n : range.startBlock);
      const { finalized } = await readChainTip(client, finalityDepth);
      if (range.to !== undefined && range.to > finalized) {
        throw new RangeAboveFinality(
          `--to ${range.to} is above the finality boundary ${finalized}; blocks above it are indexed by \`follow\`, block by block`,
        );
      }
      const checkpoint = await store.ensureCheckpoint(contracts.staker, chainId, from);
      if (from > checkpoint.indexedBlock + 1n) {
        throw new BackfillLeavesGap(
          `--from ${from} would leave blocks ${checkpoint.indexedBlock + 1n}..${from - 1n} unindexed; start at or below ${checkpoint.indexedBlock + 1n}`,
        );
      }
      const to = range.to ?? finalized;
      const chunks = to >= from ? await enqueueRange(queues.chunks, from, to, chunkSize) : 0;
      await store.raiseScheduled(to);
      return { from, to, chunks };
    },
  };
}
