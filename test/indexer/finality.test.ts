import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { type Address, createPublicClient, custom, numberToHex, type PublicClient } from "viem";
import { indexedRanges, stakedCitizens, stakerEvents } from "../../db/schema.ts";
import { commitRange } from "../../indexer/chunk-workers/index-range.ts";
import { createFetchStage, fetchRange } from "../../indexer/fetch/fetch-range.ts";
import { type FollowDeps, followTick } from "../../indexer/follower/follow.ts";
import type { IndexerOptions } from "../../indexer/indexer.ts";
import { enqueueRange } from "../../indexer/queues/queues.ts";
import { RangeStale } from "../../indexer/reorg/divergence.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startDevnetIndexer, type TestIndexer } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";

const WALLET: Address = "0x00000000000000000000000000000000000f1a11";

/**
 * The finality split: chunk jobs below the boundary, the follower block by block above it, and
 * every write proving it links to what it extends. Each test acts on the chain, indexes through
 * the real job path, and compares the tables with the staker's own views.
 */
describe("reorgs at seams, after quiet stretches and below finality", () => {
  let devnet: ScenarioDevnet;
  let actions: ReturnType<typeof stakingActions>;
  const harnesses: TestIndexer[] = [];
  let nextId = 40_000n;

  const fresh = async (label: string, options: Partial<IndexerOptions>) => {
    const harness = await startDevnetIndexer(devnet, label, { followIntervalMs: 50, ...options });
    harnesses.push(harness);
    return harness;
  };

  const stakedRows = (harness: TestIndexer, id: bigint) =>
    harness.indexer.database.db
      .select()
      .from(stakedCitizens)
      .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));

  const stakeEventsOf = (harness: TestIndexer, id: bigint) =>
    harness.indexer.database.db
      .select()
      .from(stakerEvents)
      .where(and(eq(stakerEvents.citizenId, id), eq(stakerEvents.event, "Stake")));

  /** A 3-block reorg takes the stake away; the follower alone brings the tables back to the chain. */
  const expectStakeReorgedAway = async (harness: TestIndexer, id: bigint) => {
    expect(await stakedRows(harness, id)).toHaveLength(1);
    await actions.reorg(3);
    await actions.mine([]);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toEqual([]);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  };

  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await Bun.sleep(25);
    }
  };

  /** Runs follow ticks in this process (no worker, no scheduler) until one finds nothing to do. */
  const tickUntilIdle = async (harness: TestIndexer, deps: FollowDeps = harness.indexer.deps) => {
    const taken: string[] = [];
    while (taken.at(-1) !== "idle") {
      if (taken.length > 10) throw new Error(`the follower never went idle: ${taken.join(", ")}`);
      taken.push((await followTick(deps, harness.indexer.followSettings)).action);
    }
    return taken;
  };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 200, seed: "finality" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  test("a chunk fetched before a reorg and written after its neighbour is fetched again", async () => {
    const harness = await fresh("seam", { finalityDepth: 0 });
    const { indexer } = harness;
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    const n = await actions.mine([]);
    await actions.mine([]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    await actions.mine([]);
    await actions.mine([]);
    await indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock, to: n - 1n });
    await indexer.start({ follow: false });
    await harness.waitForBlock(n - 1n);
    await indexer.store.raiseScheduled(n + 4n);

    // Chunk A (n..n+2) holds the stake; a 3-block reorg then removes it.
    const chunkA = await fetchRange(indexer.deps, { from: n, to: n + 2n });
    expect(chunkA.events.some((event) => event.citizenId === id)).toBe(true);
    await actions.reorg(3);

    // Chunk B (n+3..n+4) is fetched on the new branch and written first.
    await enqueueRange(indexer.queues.chunks, n + 3n, n + 4n, 10);
    await until("chunk B", async () => {
      const rows = await indexer.database.db.select().from(indexedRanges);
      return rows.some((row) => row.fromBlock === n + 3n);
    });

    // A's write must not commit: its last block is not the parent B was fetched on.
    await expect(commitRange(indexer.deps, chunkA)).rejects.toBeInstanceOf(RangeStale);
    expect(await stakeEventsOf(harness, id)).toEqual([]);

    // The job's retry fetches A again, from the chain as it is now.
    await enqueueRange(indexer.queues.chunks, n, n + 2n, 10);
    await harness.waitForBlock(n + 4n);
    expect(await stakeEventsOf(harness, id)).toEqual([]);
    expect(await stakedRows(harness, id)).toEqual([]);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("a chunk already under the checkpoint is rolled back when its neighbour proves the chain moved", async () => {
    const harness = await fresh("seam-under", { finalityDepth: 3 });
    const { indexer } = harness;
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    const n = await actions.mine([]);
    await actions.mine([]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    await actions.mine([]);
    await actions.mine([]);
    await indexer.start({ follow: false });
    await indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock, to: n + 1n });
    await harness.waitForBlock(n + 1n);
    // Chunk A (n+2) is written and projected: the stake is served.
    await commitRange(indexer.deps, await fetchRange(indexer.deps, { from: n + 2n, to: n + 2n }));
    expect(await stakedRows(harness, id)).toHaveLength(1);

    await actions.reorg(3);
    await indexer.store.raiseScheduled(n + 4n);
    const chunkB = await fetchRange(indexer.deps, { from: n + 3n, to: n + 4n });
    await expect(commitRange(indexer.deps, chunkB)).rejects.toBeInstanceOf(RangeStale);
    // The orphaned stake is gone at once; the lost blocks are queued again and indexed.
    expect(await stakedRows(harness, id)).toEqual([]);
    await harness.waitForBlock(n + 4n);
    expect(await stakeEventsOf(harness, id)).toEqual([]);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("a 3-block reorg after 300 empty blocks is rolled back by the follower alone", async () => {
    const harness = await fresh("quiet", { finalityDepth: undefined });
    await harness.indexer.ensureCheckpoint(await devnet.client.getBlockNumber());
    await harness.indexer.start({ follow: true });
    await harness.waitForHead();
    await devnet.client.mine({ blocks: 300 });
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    await actions.mine([]);
    await harness.waitForHead();
    await expectStakeReorgedAway(harness, id);
  });

  test("a 3-block reorg after a catch-up through chunk jobs is rolled back by the follower alone", async () => {
    const id = nextId++;
    const start = await devnet.client.getBlockNumber();
    await devnet.client.mine({ blocks: 300 });
    await actions.mine([actions.mintS1(WALLET, id)]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    await actions.mine([]);
    const harness = await fresh("catch-up", { finalityDepth: 4, chunkSize: 50 });
    await harness.indexer.ensureCheckpoint(start);
    await harness.indexer.start({ follow: true });
    await harness.waitForHead();
    await expectStakeReorgedAway(harness, id);
  });

  test("after Redis loses every key, the follower still sees a shallow reorg before it sinks below finality", async () => {
    // Polling only (no new-head subscription): the scheduled ticks are all the follower has.
    const harness = await fresh("lost-scheduler", { finalityDepth: 20 });
    await harness.indexer.ensureCheckpoint(await devnet.client.getBlockNumber());
    await harness.indexer.start({ follow: true });
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    await actions.mine([]);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toHaveLength(1);

    await harness.redis.clean();
    await actions.reorg(3);
    // The scheduler comes back within a second, so the follower rolls the stake back while the
    // reorg is still 3 deep; a follower blind for longer would meet it 40 blocks deep, below
    // the finality depth, and stop for an operator.
    await until(
      "the follower rolls the reorg back",
      async () => (await stakedRows(harness, id)).length === 0,
      5_000,
    );
    await devnet.client.mine({ blocks: 40 });
    await actions.mine([]);
    await harness.waitForHead();
    const health = await harness.indexer.store.health();
    expect(health.filter((row) => row.fatal)).toEqual([]);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("a reorg below the finality boundary stops the follower with the command that recovers", async () => {
    const harness = await fresh("too-deep", { finalityDepth: 4 });
    await harness.indexer.ensureCheckpoint(await devnet.client.getBlockNumber());
    await harness.indexer.start({ follow: true });
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    for (let i = 0; i < 6; i++) await actions.mine([]);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toHaveLength(1);

    await actions.reorg(8);
    let failure = "";
    await until("the follower to report the deep reorg", async () => {
      const follow = (await harness.indexer.store.health()).find(
        (row) => row.component === "follow",
      );
      failure = follow?.failingSince && follow.fatal ? (follow.lastError ?? "") : "";
      return failure.startsWith("ReorgTooDeep");
    });
    // Nothing was rolled back on its own: the served rows stay as they were until an operator acts.
    expect(await stakedRows(harness, id)).toHaveLength(1);
    const status = await harness.cli(["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("FAILING");
    expect(status.stdout).toContain("ReorgTooDeep");
    const api = await createApiHarness({ databaseUrl: harness.database.url });
    try {
      const ready = await api.request("/readyz");
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { follower: string; reasons: string[] };
      expect(body.follower).toBe("failing");
      expect(body.reasons.join("\n")).toContain("ReorgTooDeep");
    } finally {
      await api.close();
    }

    const command = /citizen-staking (rollback --to \d+)/.exec(failure)?.[1];
    expect(command).toBeDefined();
    const rollback = await harness.cli(command!.split(" "));
    expect(rollback.code).toBe(0);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toEqual([]);
    expect(await harness.mismatches([WALLET])).toEqual([]);
    // The follower records its health after the tick that reached the head commits.
    await until("the follower's health clears", async () => {
      const follow = (await harness.indexer.store.health()).find(
        (row) => row.component === "follow",
      );
      return follow !== undefined && follow.failingSince === null;
    });
  });

  test("a reorg that also lengthened the chain before the next tick is rolled back by the write's parent check", async () => {
    const harness = await fresh("grown", { finalityDepth: undefined });
    await harness.indexer.ensureCheckpoint(await devnet.client.getBlockNumber());
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    await actions.mine([]);
    await tickUntilIdle(harness);
    expect(await stakedRows(harness, id)).toHaveLength(1);

    await actions.reorg(3);
    await actions.mine([]);
    // The tick sees a block above the checkpoint and skips the fork check: the write claims the
    // checkpoint's hash as that block's parent, fails, and the conflict rolls the branch back.
    expect(await tickUntilIdle(harness)).toEqual(["retry", "indexed", "idle"]);
    expect(await stakedRows(harness, id)).toEqual([]);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("a block replaced after its logs were fetched is written, then rolled back by the next tick", async () => {
    const harness = await fresh("replaced-mid-fetch", { finalityDepth: undefined });
    await harness.indexer.ensureCheckpoint(await devnet.client.getBlockNumber());
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    await tickUntilIdle(harness);

    // The next block is empty; once the follower holds its header and its logs, the chain swaps
    // it for one holding a stake. Nothing it fetched names the new block, so it writes the old
    // one (the head's tick reads no header again) and the fork check finds it gone next tick.
    const { deps } = harness.indexer;
    const emptyBlock = await actions.mine([]);
    let swapped = false;
    let headerRead!: () => void;
    let logsRead!: () => void;
    const swap = Promise.all([
      new Promise<void>((resolve) => {
        headerRead = resolve;
      }),
      new Promise<void>((resolve) => {
        logsRead = resolve;
      }),
    ]).then(async () => {
      await actions.reorg(1, [[actions.stake(WALLET, 1, id), 0]]);
      swapped = true;
    });
    /** The client's answers pass unchanged; the one `isMine` picks waits for the swap. */
    const holding = (
      client: PublicClient,
      isMine: (method: string, params: unknown) => boolean,
      read: () => void,
    ) =>
      createPublicClient({
        // As the indexer's own client reads: deployless multicalls (the devnet has no Multicall3).
        batch: { multicall: { deployless: true } },
        transport: custom({
          async request({ method, params }) {
            const answer = await client.request({ method, params } as never);
            if (!swapped && isMine(method, params)) {
              read();
              await swap;
            }
            return answer;
          },
        }),
      });
    const client = holding(
      deps.client,
      (method, params) =>
        method === "eth_getBlockByNumber" && (params as unknown[])[0] === numberToHex(emptyBlock),
      headerRead,
    );
    const logClient = holding(deps.logClient, (method) => method === "eth_getLogs", logsRead);
    const swapping: FollowDeps = {
      ...deps,
      client,
      fetch: createFetchStage({ ...deps, client, logClient }),
    };
    expect(await tickUntilIdle(harness, swapping)).toEqual([
      "indexed",
      "rolled-back",
      "indexed",
      "idle",
    ]);
    expect(swapped).toBe(true);
    const checks = harness.indexer.store;
    const head = await devnet.client.getBlock({ blockNumber: emptyBlock });
    expect(await checks.storedHash(emptyBlock)).toBe(head.hash.toLowerCase());
    expect(await stakedRows(harness, id)).toHaveLength(1);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });
});
