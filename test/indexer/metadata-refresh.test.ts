/**
 * `refresh-metadata`: every citizen's tokenURI read again at the head, what changed kept, and a
 * tokenURI that no longer reads at the head never wiping the name the citizen was indexed with,
 * yet listed in `read-failures`, `status` and the metrics. Then the same with no command at all:
 * a scheduled round records a tokenURI that stopped reading, and the metadata contract swapped
 * under a running follower makes names, images and the API's ETags follow.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Queue } from "bullmq";
import { and, count, eq } from "drizzle-orm";
import type { Address } from "viem";
import { s1CitizenAbi } from "../../contracts/generated/index.ts";
import { citizens, readFailures, stakedCitizens } from "../../db/schema.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import {
  createMetadataRefresher,
  METADATA_QUEUE,
} from "../../indexer/metadata-refresher/metadata-refresh.ts";
import { parseTokenMetadata } from "../../indexer/project/metadata.ts";
import { logger } from "../../lib/log.ts";
import { openRedis } from "../../lib/redis.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";

const WALLET: Address = "0x000000000000000000000000000000000000fe11";
/** Indexed readable, then reverts at the head. */
const STARTS_REVERTING = 60_001n;
/** Indexed with malformed JSON (fallback name, a read failure), then mended. */
const MENDED = 60_002n;
/** Readable throughout. */
const UNCHANGED = 60_003n;
/** Indexed readable, then reverts at the head, found by a scheduled round. */
const STOPS_IN_ROUND = 60_004n;
/** Staked under the follower: readable, then its contract's code swapped. */
const SWAPPED = 60_011n;
/** Staked under the follower with malformed JSON (a read failure), then mended. */
const MENDED_LIVE = 60_012n;
/** Staked under the follower reverting, and reverting still: retried later each time. */
const STILL_REVERTING = 60_013n;
/** The follower's refresh interval in this test. */
const REFRESH_MS = 250;

let devnet: ScenarioDevnet;
let harness: TestIndexer;
let actions: ReturnType<typeof stakingActions>;

const stored = async (id: bigint) => {
  const db = harness.indexer.database.db;
  const [citizen] = await db
    .select({ name: citizens.name, image: citizens.image })
    .from(citizens)
    .where(and(eq(citizens.season, 1), eq(citizens.citizenId, id)));
  const [served] = await db
    .select({ name: stakedCitizens.name, image: stakedCitizens.image })
    .from(stakedCitizens)
    .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));
  const [failures] = await db
    .select({ n: count() })
    .from(readFailures)
    .where(and(eq(readFailures.season, 1), eq(readFailures.citizenId, id)));
  return { citizen, served, failures: failures?.n };
};

/** What the citizen's own tokenURI says at the head: the oracle. */
const onChain = async (id: bigint) => {
  const uri = await devnet.client.readContract({
    address: devnet.deployment.addresses.s1Citizen,
    abi: s1CitizenAbi,
    functionName: "tokenURI",
    args: [id],
  });
  const { name, image } = parseTokenMetadata(uri);
  return { name: name ?? null, image: image ?? null };
};

beforeAll(async () => {
  devnet = await startScenarioDevnet({ events: 60, seed: "metadata-refresh" });
  actions = stakingActions(devnet.client, devnet.deployment);
  await actions.wallet(WALLET);
  const ids = [STARTS_REVERTING, MENDED, UNCHANGED, STOPS_IN_ROUND];
  await actions.mine(ids.map((id) => actions.mintS1(WALLET, id)));
  await actions.mine([actions.setMetadataFault(1, MENDED, 6)]);
  await actions.mine(ids.map((id) => actions.stake(WALLET, 1, id)));
  harness = await indexDevnet(devnet, {
    label: "metadata_refresh",
    to: await devnet.client.getBlockNumber(),
  });
});

afterAll(async () => {
  await harness?.cleanup();
  await devnet?.stop();
});

describe("refresh-metadata", () => {
  test("keeps what changed, clears a mended failure, and never wipes a name on a revert", async () => {
    const before = {
      reverting: await stored(STARTS_REVERTING),
      mended: await stored(MENDED),
      unchanged: await stored(UNCHANGED),
    };
    expect(before.reverting.citizen).toEqual(await onChain(STARTS_REVERTING));
    expect(before.reverting.citizen?.name).toBeString();
    expect(before.mended).toMatchObject({ citizen: { name: null }, failures: 1 });

    await actions.mine([
      actions.setMetadataFault(1, STARTS_REVERTING, 2),
      actions.setMetadataFault(1, MENDED, 0),
    ]);
    const [{ n: citizenCount }] = (await harness.indexer.database.db
      .select({ n: count() })
      .from(citizens)) as [{ n: number }];

    const result = await harness.cli(["refresh-metadata"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `for ${citizenCount} citizens: 1 changed, 1 unreadable at the head (kept as stored)`,
    );

    const mended = await stored(MENDED);
    expect(mended.citizen).toEqual(await onChain(MENDED));
    expect(mended.citizen?.name).toBeString();
    expect(mended.served).toEqual(mended.citizen);
    expect(mended.failures).toBe(0);
    // Reverting at the head says nothing of the citizen indexed before: its name stays, and
    // the failure is recorded, so what is served stale shows.
    expect(await stored(STARTS_REVERTING)).toEqual({ ...before.reverting, failures: 1 });
    expect(await stored(UNCHANGED)).toEqual(before.unchanged);
    expect(await harness.mismatches([WALLET])).toEqual([]);
    await expectListedStale(STARTS_REVERTING, before.reverting.citizen!.name!, 1);

    // A second refresh finds nothing new; an operator's retry keeps the name too.
    const again = await harness.cli(["refresh-metadata"]);
    expect(again.stdout).toContain(`: 0 changed, 1 unreadable`);
    const retried = await harness.cli(["read-failures", "--retry"]);
    expect(retried.stdout).toContain("0 fixed, 1 still failing");
    expect(await stored(STARTS_REVERTING)).toEqual({ ...before.reverting, failures: 1 });
  });

  test("a scheduled round records a tokenURI that stopped reading and keeps its name, its ETag unmoved", async () => {
    const api = await createApiHarness({ databaseUrl: harness.database.url });
    try {
      const before = await stored(STOPS_IN_ROUND);
      expect(before.citizen?.name).toBeString();
      expect(before.failures).toBe(0);
      const path = `/v1/staking/citizens/s1/${STOPS_IN_ROUND}?address=${WALLET}`;
      const etag = (await api.request(path)).headers.get("etag");
      await actions.mine([actions.setMetadataFault(1, STOPS_IN_ROUND, 2)]);

      const redis = openRedis({ url: harness.redis.url }, "queues");
      const refresher = createMetadataRefresher({
        client: harness.indexer.client,
        contracts: harness.indexer.contracts,
        store: harness.indexer.store,
        redis,
        queuePrefix: harness.redis.prefix,
        log: logger("metadata-test"),
        intervalMs: 0,
      });
      try {
        // Rounds go a page at a time through every citizen: one full cycle reaches it.
        const [{ n: citizenCount }] = (await harness.indexer.database.db
          .select({ n: count() })
          .from(citizens)) as [{ n: number }];
        let stopped = 0;
        for (let round = 0; round <= citizenCount / 50 + 1 && stopped === 0; round++) {
          stopped += (await refresher.refreshRound()).stoppedReading;
        }
        expect(stopped).toBe(1);
      } finally {
        redis.disconnect();
      }

      expect(await stored(STOPS_IN_ROUND)).toEqual({ ...before, failures: 1 });
      await expectListedStale(STOPS_IN_ROUND, before.citizen!.name!, 2);
      // The served data did not change: same name, same ETag.
      const after = await api.request(path);
      expect(after.headers.get("etag")).toBe(etag);
      expect(((await after.json()) as { name: string }).name).toBe(before.citizen!.name!);
    } finally {
      await api.close();
    }
  });
});

/**
 * `read-failures` lists the citizen with the name it keeps, and `status` and the metrics count
 * `stale` citizens served so (every recorded failure here is one).
 */
async function expectListedStale(id: bigint, name: string, stale: number) {
  const listed = await harness.cli(["read-failures"]);
  expect(listed.code).toBe(0);
  const line = listed.stdout.split("\n").find((each) => each.startsWith(`s1 #${id}\ttokenURI`));
  expect(line).toContain(`serves the name and image last read: ${JSON.stringify(name)}`);
  const status = await harness.cli(["status"]);
  expect(status.stdout).toContain(
    `${stale} citizens with unreadable metadata, ${stale} of them served with the name and image last read`,
  );
  const metrics = await harness.indexer.metrics.scrape();
  expect(metrics).toContain(`\ncitizen_staking_read_failures ${stale}\n`);
  expect(metrics).toContain(`\ncitizen_staking_stale_metadata ${stale}\n`);
}

describe("the follower's scheduled metadata refresh", () => {
  test("the metadata contract swapped under a running follower: names, images and ETags follow with no command", async () => {
    const ids = [SWAPPED, MENDED_LIVE, STILL_REVERTING];
    await actions.mine(ids.map((id) => actions.mintS1(WALLET, id)));
    await actions.mine([
      actions.setMetadataFault(1, MENDED_LIVE, 6),
      actions.setMetadataFault(1, STILL_REVERTING, 2),
    ]);
    await actions.mine(ids.map((id) => actions.stake(WALLET, 1, id)));
    const follower = await indexDevnet(devnet, {
      label: "metadata_follow",
      follow: true,
      options: { metadataRefreshIntervalMs: REFRESH_MS },
    });
    const api = await createApiHarness({ databaseUrl: follower.database.url });
    const s1Citizen = devnet.deployment.addresses.s1Citizen;
    const original = (await devnet.client.getCode({ address: s1Citizen }))!;
    try {
      const storedIn = async (id: bigint) => {
        const db = follower.indexer.database.db;
        const [citizen] = await db
          .select({ name: citizens.name, image: citizens.image })
          .from(citizens)
          .where(and(eq(citizens.season, 1), eq(citizens.citizenId, id)));
        const [served] = await db
          .select({ name: stakedCitizens.name, image: stakedCitizens.image })
          .from(stakedCitizens)
          .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));
        const [failure] = await db
          .select()
          .from(readFailures)
          .where(and(eq(readFailures.season, 1), eq(readFailures.citizenId, id)));
        return { citizen, served, failure };
      };
      const path = `/v1/staking/citizens/s1/${SWAPPED}?address=${WALLET}`;
      const before = await api.request(path);
      const etag = before.headers.get("etag")!;
      const beforeBody = (await before.json()) as { name: string; image?: string };
      expect(beforeBody.name).toBe((await onChain(SWAPPED)).name!);
      expect((await storedIn(MENDED_LIVE)).failure).toBeDefined();

      // No event marks either change: the citizen contract's code is another one's now (the
      // season 2 contract renders other names and images), and one token is mended.
      const swappedCode = (await devnet.client.getCode({
        address: devnet.deployment.addresses.s2Citizen,
      }))!;
      await actions.mine([actions.setMetadataFault(1, MENDED_LIVE, 0)]);
      await devnet.client.setCode({ address: s1Citizen, bytecode: swappedCode });
      const swapped = await onChain(SWAPPED);
      expect(swapped.name).not.toBe(beforeBody.name);
      expect(swapped.image).not.toBe(beforeBody.image ?? null);

      // A full cycle is a round per 50 citizens; the bound is many rounds, with a wide margin.
      const [{ n: citizenCount }] = (await follower.indexer.database.db
        .select({ n: count() })
        .from(citizens)) as [{ n: number }];
      const deadline = Date.now() + REFRESH_MS * (Math.ceil(citizenCount / 50) + 2) * 20 + 30_000;
      const followed = async () => {
        const [swappedRow, mendedRow] = [await storedIn(SWAPPED), await storedIn(MENDED_LIVE)];
        return (
          swappedRow.served?.name === swapped.name &&
          mendedRow.served?.name === (await onChain(MENDED_LIVE)).name &&
          mendedRow.failure === undefined
        );
      };
      while (!(await followed())) {
        if (Date.now() > deadline) throw new Error("the refresh never followed the swap");
        await Bun.sleep(REFRESH_MS);
      }
      for (const id of [SWAPPED, MENDED_LIVE]) {
        const row = await storedIn(id);
        expect(row.citizen).toEqual(await onChain(id));
        expect(row.served).toEqual(row.citizen);
      }

      const after = await api.request(path);
      expect(after.headers.get("etag")).not.toBe(etag);
      expect(((await after.json()) as { name: string }).name).toBe(swapped.name!);
      const revalidated = await api.request(path, { headers: { "if-none-match": etag } });
      expect(revalidated.status).toBe(200);

      // A failure that keeps failing is retried later each time, its name never wiped.
      const reverting = await storedIn(STILL_REVERTING);
      expect(reverting.failure?.attempts).toBeGreaterThan(0);
      expect(reverting.failure!.retryAt.getTime()).toBeGreaterThan(
        reverting.failure!.recordedAt.getTime() + REFRESH_MS,
      );
    } finally {
      await devnet.client.setCode({ address: s1Citizen, bytecode: original });
      await api.close();
      await follower.cleanup();
    }
  });
});

describe("scheduled refresh rounds across processes", () => {
  test("two refreshers on one queue make one round per interval between them, not one each", async () => {
    const intervalMs = 200;
    let rounds = 0;
    const connections = [1, 2].map(() => openRedis({ url: harness.redis.url }, "queues"));
    const refreshers = connections.map((redis) =>
      createMetadataRefresher({
        client: harness.indexer.client,
        contracts: harness.indexer.contracts,
        // The real store; only its page reads are counted, one per round.
        store: {
          ...harness.indexer.store,
          storedMetadata: (after, limit) => {
            rounds++;
            return harness.indexer.store.storedMetadata(after, limit);
          },
        },
        redis,
        queuePrefix: harness.redis.prefix,
        log: logger("metadata-test"),
        intervalMs,
      }),
    );
    const started = performance.now();
    try {
      await Promise.all(refreshers.map((refresher) => refresher.start()));
      await Bun.sleep(20 * intervalMs);
    } finally {
      await Promise.all(refreshers.map((refresher) => refresher.close()));
      for (const redis of connections) redis.disconnect();
    }
    const elapsed = performance.now() - started;
    // One timer per process would make about twice the slots; a loaded machine makes fewer.
    expect(rounds).toBeGreaterThan(1);
    expect(rounds).toBeLessThanOrEqual(Math.ceil(elapsed / intervalMs) + 2);
  });
});

describe("a failed round as its job keeps it", () => {
  test("the failed reason and stack name the node's host, never the key in its URL", async () => {
    const key = "b0c1a7e5d2f94e6c8a3b7d1e0f2a4c6e";
    // Nothing listens on port 9 of the loopback: every call fails, quoting the URL it tried.
    const client = createChainClient(`http://127.0.0.1:9/v3/${key}`, { retryCount: 0 });
    const redis = openRedis({ url: harness.redis.url }, "queues");
    const queue = new Queue(METADATA_QUEUE, { connection: redis, prefix: harness.redis.prefix });
    const refresher = createMetadataRefresher({
      client,
      contracts: harness.indexer.contracts,
      store: harness.indexer.store,
      redis,
      queuePrefix: harness.redis.prefix,
      log: logger("metadata-test"),
      intervalMs: 100,
    });
    try {
      await refresher.start();
      const deadline = Date.now() + 15_000;
      let failed = await queue.getFailed();
      while (failed.length === 0 && Date.now() < deadline) {
        await Bun.sleep(50);
        failed = await queue.getFailed();
      }
      expect(failed.length).toBeGreaterThan(0);
      const kept = JSON.stringify(failed.map((job) => [job.failedReason, job.stacktrace]));
      expect(kept).toContain("127.0.0.1:9");
      expect(kept).not.toContain(key);
    } finally {
      await refresher.close();
      await queue.obliterate({ force: true });
      await queue.close();
      redis.disconnect();
    }
  });
});
