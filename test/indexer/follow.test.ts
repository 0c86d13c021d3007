import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { openRedis } from "../../lib/redis.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";

describe("following the head while the scenario keeps producing blocks", () => {
  let devnet: ScenarioDevnet;
  const harnesses: TestIndexer[] = [];
  const proxies: Awaited<ReturnType<typeof startTcpProxy>>[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 2_000, seed: "follow" });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    for (const proxy of proxies) await proxy.stop();
    await devnet?.stop();
  });

  const liveBlocks = async (
    blocks: number,
    intervalMs: number,
    during?: (block: number) => Promise<void>,
  ) => {
    const stop = new AbortController();
    let produced = 0;
    let pending: Promise<void> = Promise.resolve();
    await devnet.scenario.live({
      intervalMs,
      transactionsPerBlock: 4,
      signal: stop.signal,
      onBlock: () => {
        produced++;
        if (during) pending = pending.then(() => during(produced));
        if (produced >= blocks) stop.abort();
      },
    });
    await pending;
  };

  test("the tables match the staker's views at the head after 30 live blocks", async () => {
    const harness = await startTestIndexer({
      label: "follow",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { followIntervalMs: 50, finalityDepth: undefined },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    await liveBlocks(30, 100);
    await harness.waitForHead();
    expect(await harness.mismatches()).toEqual([]);
  });

  test("with a WebSocket endpoint, each new block is indexed without waiting for the polling tick", async () => {
    const harness = await startTestIndexer({
      label: "new-heads",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      // The scheduled tick comes once a minute: only the new-head subscription can keep up.
      options: {
        followIntervalMs: 60_000,
        finalityDepth: undefined,
        wsUrl: devnet.node.rpcUrl.replace(/^http/, "ws"),
      },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    await harness.waitForHead(10_000);
    await liveBlocks(5, 300);
    await harness.waitForHead(5_000);
    expect(await harness.mismatches()).toEqual([]);
  });

  test("a Postgres and Redis outage mid-run is survived without a manual step", async () => {
    const postgresProxy = await startTcpProxy({ host: "127.0.0.1", port: 5432 });
    const redisProxy = await startTcpProxy({ host: "127.0.0.1", port: 6379 });
    proxies.push(postgresProxy, redisProxy);
    const harness = await startTestIndexer({
      label: "outage",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { followIntervalMs: 50, chunkSize: 3, jobLockMs: 1_000 },
      route: { database: postgresProxy.route, redis: redisProxy.route },
    });
    harnesses.push(harness);
    await harness.indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock });
    await harness.indexer.start({ follow: true });
    let outageAt = 0n;
    await liveBlocks(20, 100, async (block) => {
      if (block !== 5) return;
      postgresProxy.cut();
      redisProxy.cut();
      outageAt = await devnet.client.getBlockNumber();
      await Bun.sleep(2_000);
      postgresProxy.restore();
      redisProxy.restore();
    });
    expect(outageAt).toBeGreaterThan(0n);
    await harness.waitForHead(90_000);
    expect(await harness.mismatches()).toEqual([]);
  });

  test("a tick held past its limit is reported, and neither the follower nor its lease waits on it", async () => {
    const harness = await startTestIndexer({
      label: "held-tick",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      // A tick's limit is twice a node call's worst case: 2 × (7 tries × 250 ms + 6.3 s of
      // backoff) = 16.1 s.
      options: { followIntervalMs: 50, rpcTimeoutMs: 250, followLeaseMs: 1_000 },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    await harness.waitForHead();
    const me = (await harness.indexer.followLease()).leader!;
    // An operator's transaction left open on the checkpoint table (ALTER TABLE, LOCK TABLE,
    // VACUUM FULL in a psql session) holds every tick at its first read while it stays open.
    const operator = postgres(harness.database.url, { max: 2, onnotice: () => {} });
    const session = await operator.reserve();
    await session`BEGIN`;
    await session`LOCK TABLE indexer_checkpoints IN ACCESS EXCLUSIVE MODE`;
    // Read apart from the indexer's pool, whose connections the held ticks may all be holding.
    const followHealth = async () =>
      (
        await operator<{ lastError: string | null; failingSince: Date | null }[]>`
          SELECT last_error AS "lastError", failing_since AS "failingSince"
          FROM indexer_health WHERE component = 'follow'`
      )[0];
    const redis = openRedis({ url: harness.redis.url }, "look");
    try {
      await liveBlocks(2, 100);
      const stuck = async () => (await followHealth())?.lastError?.startsWith("FollowTickStuck");
      await until(stuck, LIMITS_MS);
      // Another follow process takes the lease (this one's lapsed in a Redis outage, say), then
      // dies: this one stands by, which stops its follower, and must lead again once the
      // lease is free, though its held tick is still waiting.
      const lease = `${harness.redis.prefix}:follower:lease`;
      const other = JSON.stringify({ host: "elsewhere", pid: 1, id: "another" });
      await redis.set(lease, other, "PX", 2_000);
      await until(async () => (await harness.indexer.followLease()).leader?.id === "another");
      await until(
        async () => (await harness.indexer.followLease()).leader?.id === me.id,
        LIMITS_MS,
      );
      // A second tick given up, no third starts: each waits holding a Postgres connection. The
      // failed tick says so in its job (the health record may not get a connection by then).
      const full = async () =>
        (await harness.indexer.queues.follow.getFailed(0, 49)).some((job) =>
          job.failedReason.includes("no new one starts"),
        );
      await until(full, 2 * LIMITS_MS);
    } finally {
      await session`COMMIT`;
      session.release();
      redis.disconnect();
    }
    await liveBlocks(2, 100);
    await harness.waitForHead();
    await until(async () => (await followHealth())?.failingSince === null);
    await operator.end();
    expect(await harness.mismatches()).toEqual([]);
  });
});

/** A wait that spans a follow tick's limit in the test above, and a loaded machine's allowance. */
const LIMITS_MS = 45_000;

/** Waits until `check` holds, for up to 30 s (a loaded machine's allowance). */
async function until(check: () => Promise<boolean | undefined>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not so within ${timeoutMs} ms: ${check}`);
    await Bun.sleep(50);
  }
}
