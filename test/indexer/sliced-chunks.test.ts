/**
 * A chunk holding more events than the process's budget (EVENTS_IN_FLIGHT) is worked in slices
 * of blocks, each fetched, read and written before the next, so a worker's memory follows the
 * budget whatever CHUNK_SIZE is. The chain is the oracle: the tables equal its views, and those
 * of a run that took the same chunk whole.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { indexRange } from "../../indexer/chunk-workers/index-range.ts";
import type { RangeWrite, WriteOptions } from "../../indexer/store/index.ts";
import { indexDevnet, startDevnetIndexer, type TestIndexer } from "../support/indexer.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { tableSnapshot } from "../support/snapshot.ts";

const BUDGET = 500;

describe("a chunk larger than the event budget", () => {
  let devnet: ScenarioChain;
  let head: bigint;
  let wholeTables: Record<string, string[]>;
  const harnesses: TestIndexer[] = [];

  /** A fresh indexer with the whole chain queued as one chunk job, its workers not started. */
  const queuedAsOneChunk = async (label: string) => {
    const harness = await startDevnetIndexer(devnet, label, {
      chunkSize: 100_000,
      eventsInFlight: BUDGET,
    });
    harnesses.push(harness);
    const backfill = await harness.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
      to: head,
    });
    expect(backfill.chunks).toBe(1);
    return harness;
  };

  /** The harness's chunk job dependencies, its store's range writes seen (and maybe stopped). */
  const watchedWrites = (harness: TestIndexer, stopAfter = Number.POSITIVE_INFINITY) => {
    const { store } = harness.indexer.deps;
    const writes: { from: bigint; to: bigint; events: number }[] = [];
    const deps = {
      ...harness.indexer.deps,
      store: {
        ...store,
        async writeRange(write: RangeWrite, options?: WriteOptions) {
          const indexed = await store.writeRange(write, options);
          writes.push({ from: write.fromBlock, to: write.toBlock, events: write.events.length });
          // The process dies right after this commit: nothing after it runs.
          if (writes.length >= stopAfter) throw new Error("worker killed between two slices");
          return indexed;
        },
      },
    };
    return { deps, writes };
  };

  beforeAll(async () => {
    // crash-safety.test.ts's chain: the cached scenario is shared.
    devnet = await startScenarioChain({ events: 3_000, seed: "crash-safety" });
    head = await devnet.client.getBlockNumber();
    const whole = await indexDevnet(devnet, {
      label: "whole-chunk",
      options: { chunkSize: 100_000, eventsInFlight: 100_000 },
      to: head,
    });
    harnesses.push(whole);
    expect(whole.backfill.chunks).toBe(1);
    wholeTables = await tableSnapshot(whole.database.url);
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  test("is written in slices of blocks, each within the budget, ending in the chain's tables", async () => {
    const harness = await queuedAsOneChunk("sliced");
    const { deps, writes } = watchedWrites(harness);
    const from = devnet.deployment.deployBlock;
    const result = await indexRange(deps, { from, to: head });

    expect(result.indexedBlock).toBe(head);
    expect(result.events).toBe(devnet.progress.stakerEvents);
    expect(devnet.progress.stakerEvents).toBeGreaterThan(4 * BUDGET);
    expect(writes.length).toBeGreaterThan(4);
    // One after another, from the chunk's first block to its last, none of several blocks
    // holding more than the budget.
    expect(writes[0]!.from).toBe(from);
    expect(writes.at(-1)!.to).toBe(head);
    for (const [index, write] of writes.entries()) {
      if (index > 0) expect(write.from).toBe(writes[index - 1]!.to + 1n);
      if (write.to > write.from) expect(write.events).toBeLessThanOrEqual(BUDGET);
    }
    expect(writes.reduce((sum, write) => sum + write.events, 0)).toBe(result.events);

    expect(await tableSnapshot(harness.database.url)).toEqual(wholeTables);
    expect(await harness.mismatches()).toEqual([]);
  });

  test("a slice waiting for the writers' lock holds none of the budget: its rows are in", async () => {
    const harness = await queuedAsOneChunk("lock-wait");
    const { eventBudget } = harness.indexer.deps;
    // Another writer holds the lock: every slice's move of the checkpoint waits for it.
    const other = postgres(harness.database.url, { max: 1, onnotice: () => {} });
    await other`select pg_advisory_lock(hashtext('citizen-staking:index'))`;
    const from = devnet.deployment.deployBlock;
    const run = indexRange(harness.indexer.deps, { from, to: head });
    try {
      const rows = async () => (await other`select count(*)::int as n from staker_events`)[0]!.n;
      while ((await rows()) === 0) await Bun.sleep(20);
      // A slice's rows are in; the whole budget is admitted while its move waits.
      const probe = eventBudget!.hold();
      const admitted = await Promise.race([
        probe.admit(BUDGET).then(() => true),
        Bun.sleep(20_000).then(() => false),
      ]);
      expect(admitted).toBe(true);
      probe.release();
      const [checkpoint] = await other`select indexed_block::text from indexer_checkpoints`;
      expect(BigInt(checkpoint!.indexed_block)).toBe(from - 1n);
    } finally {
      await other`select pg_advisory_unlock(hashtext('citizen-staking:index'))`;
      await other.end();
    }
    expect((await run).indexedBlock).toBe(head);
  });

  test("a worker stopped between two slices leaves the checkpoint inside the chunk, and the job's retry ends in the same tables", async () => {
    const harness = await queuedAsOneChunk("stopped-mid-chunk");
    const { deps, writes } = watchedWrites(harness, 2);
    const from = devnet.deployment.deployBlock;
    await expect(indexRange(deps, { from, to: head })).rejects.toThrow("killed between");
    const stoppedAt = (await harness.indexer.store.checkpoint())!.indexedBlock;
    expect(stoppedAt).toBe(writes[1]!.to);
    expect(stoppedAt).toBeLessThan(head);

    // The queued job (still waiting: no worker took it here) runs the whole chunk again.
    await harness.indexer.start({ follow: false });
    await harness.waitForBlock(head);
    expect(await tableSnapshot(harness.database.url)).toEqual(wholeTables);
    expect(await harness.mismatches()).toEqual([]);
  });
});
