import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type CitizenKey, readCitizens } from "../../indexer/chain/citizen-reads.ts";
import { s1CitizenAbi, s2CitizenAbi } from "../../indexer/chain/token-abis.ts";
import {
  ClaimedCitizenReads,
  citizenClaimKey,
} from "../../indexer/chunk-workers/citizen-claims.ts";
import { openRedis } from "../../lib/redis.ts";
import type { Season } from "../../lib/vocabulary.ts";
import { startCommand } from "../support/commands.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startRpcProxy } from "../support/rpc-proxy.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { functionNames } from "../support/view-calls.ts";

/** Each citizen read asks its contract for the identity once: one count per citizen read. */
const IDENTITY_READ = "getIdentityIdOfTokenId";

/**
 * Worker processes claim a new citizen in Redis before reading it, so however many run, each
 * citizen is read once; a claim whose holder died lapses and another process reads it.
 */
describe("citizen reads claimed across worker processes", () => {
  let devnet: ScenarioChain;
  const harnesses: TestIndexer[] = [];

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 400, seed: "citizen-claims", wallets: 6 });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  /** A backfill of the whole devnet by `workers` worker processes; the citizen reads they made. */
  async function backfillWith(workers: number) {
    const proxy = startRpcProxy(devnet.node.rpcUrl, {
      delayMs: 0,
      functionNames: functionNames([s1CitizenAbi, s2CitizenAbi]),
    });
    const harness = await startTestIndexer({
      label: `claims-w${workers}`,
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { chunkSize: 5 },
    });
    harnesses.push(harness);
    const processes = Array.from({ length: workers }, () =>
      startCommand(
        ["scripts/cli.ts", "worker"],
        harness.cliEnv({ RPC_URL: proxy.url, CONCURRENCY: "4" }),
      ),
    );
    try {
      const deadline = Date.now() + 60_000;
      while ((await harness.indexer.queues.chunks.getWorkersCount()) < workers) {
        if (Date.now() > deadline) throw new Error("the worker processes did not connect in 60 s");
        await Bun.sleep(25);
      }
      proxy.reset();
      const head = await devnet.client.getBlockNumber();
      await harness.indexer.enqueueBackfill({
        startBlock: devnet.deployment.deployBlock,
        to: head,
      });
      await harness.waitForBlock(head, 150_000);
      const [row] = await harness.indexer.database.client<{ citizens: number }[]>`
        select count(*)::int as citizens from citizens`;
      return {
        harness,
        citizenReads: proxy.tally().viewCallsByFunction[IDENTITY_READ] ?? 0,
        citizens: row!.citizens,
      };
    } finally {
      for (const process of processes) await process.stop();
      await proxy.stop();
    }
  }

  test("four worker processes read no more citizens than one, and the tables equal the chain", async () => {
    const one = await backfillWith(1);
    const four = await backfillWith(4);
    expect(four.citizens).toBe(one.citizens);
    expect(one.citizens).toBeGreaterThan(20);
    expect(four.citizenReads).toBeLessThanOrEqual(one.citizenReads);
    expect(four.citizenReads).toBe(four.citizens);
    expect(await four.harness.mismatches()).toEqual([]);
  }, 400_000);

  test("a claim whose holder died is read by another process once it lapses", async () => {
    const harness = harnesses[0]!;
    const [citizen] = await harness.indexer.database.client<
      { season: Season; citizen_id: string }[]
    >`
      select season, citizen_id::text from citizens order by season, citizen_id limit 1`;
    const key: CitizenKey = { season: citizen!.season, citizenId: BigInt(citizen!.citizen_id) };
    // Under the harness prefix, so its cleanup removes these keys too.
    const prefix = `${harness.redis.prefix}:dead-holder`;
    const redis = openRedis({ url: harness.redis.url }, "queues");
    try {
      const claim = citizenClaimKey(prefix, key.season, key.citizenId);
      await redis.set(claim, "a worker that died", "PX", 1_500);
      const reads = new ClaimedCitizenReads(redis, prefix, { claimMs: 1_500, pollMs: 20 });
      const block = await devnet.client.getBlockNumber();
      const holders: (string | null)[] = [];
      const [reading] = await reads.read([key], async (keys) => {
        holders.push(await redis.get(claim));
        return readCitizens(harness.indexer.client, harness.indexer.contracts, keys, block);
      });
      const [expected] = await readCitizens(
        harness.indexer.client,
        harness.indexer.contracts,
        [key],
        block,
      );
      expect(reading).toEqual(expected!);
      // Read once, and only after the dead holder's claim lapsed and this process took it.
      expect(holders).toHaveLength(1);
      expect(holders[0]).not.toBeNull();
      expect(holders[0]).not.toBe("a worker that died");

      // A live holder's reading serves a second process, which reads nothing itself.
      const other = new ClaimedCitizenReads(redis, prefix, { claimMs: 60_000, pollMs: 20 });
      const otherKey = { ...key, citizenId: key.citizenId + 100_000n };
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const holder = reads.read([otherKey], async (keys) => {
        await gate;
        return keys.map((k) => ({ ...expected!, citizenId: k.citizenId }));
      });
      while (
        (await redis.get(citizenClaimKey(prefix, otherKey.season, otherKey.citizenId))) === null
      )
        await Bun.sleep(10);
      let waiterRead = false;
      const waiter = other.read([otherKey], async () => {
        waiterRead = true;
        throw new Error("the waiter read a citizen another process holds");
      });
      await Bun.sleep(200);
      release();
      expect((await waiter)[0]).toEqual((await holder)[0]!);
      expect(waiterRead).toBe(false);
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});
