import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { stakedCitizens } from "../../db/schema.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { tableSnapshot } from "../support/snapshot.ts";

/**
 * `reproject` rebuilds staked_citizens from what is stored, with no node: while the follower
 * keeps indexing live blocks and the API keeps answering, and ending where a fresh backfill ends.
 */
describe("re-projection without the chain", () => {
  let devnet: ScenarioDevnet;
  const harnesses: TestIndexer[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 1_500, seed: "reproject" });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  test("during a live follow and API load: no RPC call, no failed request, tables as a fresh backfill's", async () => {
    const harness = await startTestIndexer({
      label: "reproject",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { finalityDepth: undefined, followIntervalMs: 50 },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    await harness.waitForHead();

    const api = await createApiHarness({ databaseUrl: harness.database.url });
    const [citizen] = await harness.indexer.database.db.select().from(stakedCitizens).limit(1);
    const path = `/v1/staking/citizens/s${citizen!.season}/${citizen!.citizenId}?address=${citizen!.staker}`;
    const statuses = new Map<number, number>();
    let loading = true;
    const load = (async () => {
      while (loading) {
        const response = await api.request(path);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    })();
    // Any call the command made would reach this proxy.
    const node = startRpcFaultProxy({ upstream: devnet.node.rpcUrl, faultRate: 0, holdMs: 0 });

    const stop = new AbortController();
    let blocks = 0;
    const live = devnet.scenario.live({
      intervalMs: 150,
      transactionsPerBlock: 4,
      signal: stop.signal,
      onBlock: () => {
        if (++blocks >= 12) stop.abort();
      },
    });
    try {
      for (let run = 0; run < 3; run++) {
        const reprojected = await harness.cli(["reproject"], { RPC_URL: node.url });
        expect(reprojected.code).toBe(0);
        expect(reprojected.stdout).toMatch(/^reprojected \d+ staked citizens as of block \d+/);
      }
      await live;
    } finally {
      loading = false;
      await load;
      node.stop();
      await api.close();
    }
    expect(node.counts.passed).toBe(0);
    expect([...statuses.keys()].filter((status) => status >= 500)).toEqual([]);
    expect(statuses.get(200)).toBeGreaterThan(0);

    const head = await harness.waitForHead();
    // A projection gone wrong (as after a change of its rules): only the stored events and reads
    // can put it right.
    const db = harness.indexer.database.db;
    await db.execute(sql`delete from staked_citizens where citizen_id % 2 = 0`);
    await db.execute(sql`update staked_citizens set total_points = 0, name = 'wrong'`);
    expect((await harness.cli(["reproject"])).code).toBe(0);
    const fresh = await startTestIndexer({
      label: "reproject-fresh",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
    });
    harnesses.push(fresh);
    await fresh.indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock, to: head });
    await fresh.indexer.start({ follow: false });
    await fresh.waitForBlock(head);
    expect(await tableSnapshot(harness.database.url)).toEqual(
      await tableSnapshot(fresh.database.url),
    );
    expect(await harness.mismatches()).toEqual([]);
  });
});
