/**
 * A node behind the chain is not a reorg. Behind a load balancer whose second backend answers a
 * few blocks behind, or alone and far behind the checkpoint, the node lacks blocks the indexer
 * has: the indexer waits for them, rolls nothing back and stops for nothing, and the tables
 * equal the chain once the node has caught up. A real reorg, onto a shorter branch too, is still
 * rolled back. The lagging node is a proxy in front of anvil answering as a lagging geth does.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { Address } from "viem";
import { stakedCitizens } from "../../db/schema.ts";
import { SeededRandom } from "../../devnet/random.ts";
import { NODE_BEHIND_RETRY_MS } from "../../indexer/chunk-workers/chunk-workers.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { stakingActions } from "../support/staking.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

const WALLET: Address = "0x000000000000000000000000000000000000b0b1";

describe("a node behind the chain is waited for, never rolled back", () => {
  let devnet: ScenarioDevnet;
  let actions: ReturnType<typeof stakingActions>;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  let nextId = 60_000n;

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 200, seed: "lagging" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
  });

  // Each test's indexers and proxies go when it ends: an indexer left following would roll back
  // the next test's reorgs too.
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  /** A lagging-node proxy in front of the devnet's anvil, stopped after the file. */
  const lyingNode = () => {
    const node = startLyingNode(devnet.node.rpcUrl);
    cleanups.push(() => node.stop());
    return node;
  };

  const indexed = async (label: string, rpcUrl: string) => {
    const harness = await indexDevnet(devnet, {
      label,
      rpcUrl,
      options: { followIntervalMs: 50, finalityDepth: undefined },
      follow: true,
    });
    cleanups.push(() => harness.cleanup());
    return harness;
  };

  /** A new S1 citizen of WALLET, minted in one block and staked in the next. */
  const stakeNew = async () => {
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    await actions.mine([actions.stake(WALLET, 1, id)]);
    return id;
  };

  const stakedRows = (harness: TestIndexer, id: bigint) =>
    harness.indexer.database.db
      .select()
      .from(stakedCitizens)
      .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));

  /** The sum of a metric's samples (those with exactly `labels`, when given) in a scrape. */
  const metric = async (harness: TestIndexer, name: string, labels?: string) => {
    let sum = 0;
    for (const line of (await harness.indexer.metrics.scrape()).split("\n")) {
      if (line.startsWith("#")) continue;
      const [series = "", value] = line.split(" ");
      const [seriesName, seriesLabels = ""] = series.split(/(?=\{)/);
      if (seriesName === name && (labels === undefined || seriesLabels === labels)) {
        sum += Number(value);
      }
    }
    return sum;
  };

  /** What the indexer did that a node behind must never cause. */
  const damage = async (harness: TestIndexer) => ({
    rollbacks: await metric(harness, "citizen_staking_reorg_rollbacks_total"),
    failing: (await harness.indexer.store.health())
      .filter((row) => row.failingSince !== null)
      .map((row) => `${row.component}: ${row.lastError}`),
  });

  // Logs past its head: refused, as geth 1.15.9+ and reth answer, or left out, as older geth did.
  for (const logsPastHead of ["refused", "left out"] as const) {
    test(`behind a load balancer whose other backend is 3-10 blocks behind (logs past its head ${logsPastHead}): no rollback, no stake vanishes`, async () => {
      const node = lyingNode();
      const harness = await indexed("lagging_pair", node.url);
      const api = await createApiHarness({ databaseUrl: harness.database.url });
      cleanups.push(() => api.close());
      const served = async () => {
        const response = await api.request(`/v1/staking/citizens?address=${WALLET}&limit=100`);
        return ((await response.json()) as { items: unknown[] }).items.length;
      };

      // WALLET only ever stakes: the API's count of its citizens may only grow.
      const before = await served();
      let most = before;
      const vanished: string[] = [];
      let watching = true;
      const watch = (async () => {
        while (watching) {
          const count = await served();
          if (count < most) vanished.push(`${most} -> ${count}`);
          if (count > most) most = count;
          await Bun.sleep(20);
        }
      })();

      const random = new SeededRandom("lagging-pair");
      const staked: bigint[] = [];
      try {
        for (let round = 0; round < 20; round++) {
          // Half the requests go to a backend 3 to 10 blocks behind the other, as hosted providers do.
          node.lagBehind({ behind: { blocks: random.int(3, 10) }, share: 0.5, logsPastHead });
          staked.push(await stakeNew());
          await Bun.sleep(100);
          await actions.mine([]);
          await Bun.sleep(100);
        }
      } finally {
        watching = false;
        await watch;
      }
      // The lagging backend is caught up (or taken out): the follower reaches the head.
      node.lagBehind(undefined);
      await actions.mine([]);
      await harness.waitForHead();

      expect({ vanished, ...(await damage(harness)) }).toEqual({
        vanished: [],
        rollbacks: 0,
        failing: [],
      });
      // The lagging backend answered, and the follower waited for it.
      expect(node.counts.lackedBlocks).toBeGreaterThan(0);
      expect(await metric(harness, "citizen_staking_node_behind_waits_total")).toBeGreaterThan(0);
      expect(await served()).toBe(before + staked.length);
      for (const id of staked) expect(await stakedRows(harness, id)).toHaveLength(1);
      expect(await harness.mismatches()).toEqual([]);
    });
  }

  test("a lone node 70 blocks behind the checkpoint: no ReorgTooDeep, no rollback; the follower waits and catches up with it", async () => {
    const node = lyingNode();
    const harness = await indexed("lagging_lone", node.url);
    const early = await stakeNew();
    const checkpoint = await harness.waitForHead();

    // The node the indexer is pointed at is 70 blocks behind the block it indexed.
    node.lagBehind({ behind: { blocks: 70 } });
    await Bun.sleep(1_000);
    expect(await damage(harness)).toEqual({ rollbacks: 0, failing: [] });
    expect(await metric(harness, "citizen_staking_node_behind_waits_total")).toBeGreaterThan(0);
    const later: bigint[] = [];
    for (let i = 0; i < 10; i++) {
      later.push(await stakeNew());
      await actions.mine([]);
    }
    await Bun.sleep(500);
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBe(checkpoint);
    expect(await stakedRows(harness, early)).toHaveLength(1);
    expect(await damage(harness)).toEqual({ rollbacks: 0, failing: [] });

    // What an operator sees meanwhile: the node behind, the follower waiting, nothing failing.
    const behind = checkpoint - ((await devnet.client.getBlockNumber()) - 70n);
    const status = await harness.cli(["status"]);
    expect(status.stdout).toContain(`the node is ${behind} blocks behind the indexed block`);
    expect(status.stdout).not.toContain("FAILING");
    expect(await metric(harness, "citizen_staking_node_behind_blocks")).toBe(Number(behind));

    // The node catches up part of the way: the follower follows it, and no further.
    node.lagBehind({ behind: { blocks: 10 } });
    const nodeHead = (await devnet.client.getBlockNumber()) - 10n;
    await harness.waitForBlock(nodeHead);
    await Bun.sleep(300);
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBe(nodeHead);

    node.lagBehind(undefined);
    await harness.waitForHead();
    for (const id of [early, ...later]) expect(await stakedRows(harness, id)).toHaveLength(1);
    expect(await damage(harness)).toEqual({ rollbacks: 0, failing: [] });
    expect(await harness.mismatches()).toEqual([]);
  });

  test("a chunk job past the node's head waits for the node, its attempts kept", async () => {
    const node = lyingNode();
    const id = await stakeNew();
    for (let i = 0; i < 10; i++) await actions.mine([]);
    const head = await devnet.client.getBlockNumber();
    const harness = await startTestIndexer({
      label: "lagging_chunks",
      rpcUrl: node.url,
      staker: devnet.deployment.addresses.staker,
      options: { chunkSize: 50 },
    });
    cleanups.push(() => harness.cleanup());
    // Queued up to the head one node named; the node that answers the chunks holds 8 blocks fewer.
    await harness.indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock, to: head });
    node.lagBehind({ behind: { head: head - 8n } });
    await harness.indexer.start({ follow: false });
    // Two waits, not a fixed sleep: the job found the node behind, was retried, and found it
    // behind again; neither attempt failed it.
    const waits = () =>
      metric(harness, "citizen_staking_node_behind_waits_total", '{queue="chunks"}');
    const deadline = Date.now() + NODE_BEHIND_RETRY_MS + LOADED_MACHINE_MS;
    while ((await waits()) < 2) {
      if (Date.now() > deadline) throw new Error("the chunk job never waited twice for the node");
      await Bun.sleep(50);
    }
    expect(await metric(harness, "citizen_staking_job_failures_total")).toBe(0);
    expect(await damage(harness)).toEqual({ rollbacks: 0, failing: [] });
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBeLessThan(head);

    node.lagBehind(undefined);
    await harness.waitForBlock(head);
    expect(await metric(harness, "citizen_staking_job_failures_total")).toBe(0);
    expect(await harness.indexer.queues.chunks.getJobCounts("failed")).toEqual({ failed: 0 });
    expect(await damage(harness)).toEqual({ rollbacks: 0, failing: [] });
    expect(await stakedRows(harness, id)).toHaveLength(1);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("a reorg onto a shorter branch is still rolled back", async () => {
    const harness = await indexed("shorter_branch", devnet.node.rpcUrl);
    const id = await stakeNew();
    const checkpoint = await actions.mine([]);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toHaveLength(1);

    // The mint, the stake and the block after them leave the chain; one new block takes their
    // place, so the chain is now two blocks shorter than what was indexed.
    await actions.rollback(3);
    const newHead = await actions.mine([]);
    expect(newHead).toBe(checkpoint - 2n);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toEqual([]);
    expect(await metric(harness, "citizen_staking_reorg_rollbacks_total")).toBe(1);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("a chain that only lost blocks looks like a node behind: waited for, then rolled back once it grows a block of its own", async () => {
    const harness = await indexed("lost_blocks", devnet.node.rpcUrl);
    const id = await stakeNew();
    const checkpoint = await actions.mine([]);
    await harness.waitForHead();

    // The stake's block and the one after it are gone, and nothing replaced them yet: the node's
    // head is a block the indexer holds with the same hash, just as a node behind would show.
    await actions.rollback(2);
    await Bun.sleep(1_000);
    expect(await metric(harness, "citizen_staking_reorg_rollbacks_total")).toBe(0);
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBe(checkpoint);
    expect(await metric(harness, "citizen_staking_node_behind_waits_total")).toBeGreaterThan(0);

    // A block of the new branch is the evidence: another hash at a height the indexer holds.
    await actions.mine([]);
    await harness.waitForHead();
    expect(await stakedRows(harness, id)).toEqual([]);
    expect(await metric(harness, "citizen_staking_reorg_rollbacks_total")).toBe(1);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });
});
