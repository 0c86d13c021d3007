/**
 * Three API processes behind a real load balancer (haproxy, started here), on one database and
 * Redis that a follower keeps indexing from anvil. Requests spread over the instances; a cached
 * answer and an ETag mean the same on each; a token revoked is refused by every instance from the
 * next request; and a live stream whose instance is killed -9 while the chain moves resumes on
 * another instance with Last-Event-ID, with no change lost or sent twice, without waiting out the
 * dead instance's stream lease (one stream per token, so the lease alone would refuse it). The
 * tables equal the chain after. Run by scripts/fleet-test.sh (haproxy, a few minutes).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Address } from "viem";
import { createDatabase } from "../../db/client.ts";
import { createToken, revokeToken } from "../../db/tokens.ts";
import { freePort } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { openRedis } from "../../lib/redis.ts";
import { assemble, openStream, type StreamClient, type StreamEvent } from "../api/stream-client.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import { type LoadBalancer, SERVED_BY, startLoadBalancer } from "../support/load-balancer.ts";
import { stakingActions } from "../support/staking.ts";
import { DEVNET_SETUP_MS, LOADED_MACHINE_MS } from "../support/time.ts";

const WALLET: Address = "0x00000000000000000000000000000000a91f1ee7";
const BYTE = 10n ** 18n;
const NAMES = ["a", "b", "c"];
/** The SSE `retry` the API sends: a browser waits this long before it reconnects. */
const RECONNECT_MS = 1_000;
/** Blocks mined while the stream's instance is killed, each a BYTES deposit on the wallet. */
const MOVES = 16;

interface Instance {
  name: string;
  port: number;
  process: ReturnType<typeof startCommand>;
}

describe("three API instances behind haproxy", () => {
  let devnet: ScenarioDevnet;
  let indexer: IndexedDevnet;
  let actions: ReturnType<typeof stakingActions>;
  let balancer: LoadBalancer;
  let tokens: ReturnType<typeof createDatabase>;
  const instances: Instance[] = [];
  const opened: StreamClient[] = [];
  const redis = openRedis(config.redis, "queues");

  const direct = (instance: Instance) => `http://127.0.0.1:${instance.port}`;
  const get = (base: string, path: string, token: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const stream = async (token: string, lastEventId?: string) => {
    const client = await openStream(
      `${balancer.url}/v1/staking/citizens/stream?address=${WALLET}`,
      {
        authorization: `Bearer ${token}`,
        ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }),
      },
    );
    opened.push(client);
    return client;
  };
  const lastSynced = (events: StreamEvent[]) =>
    (events.filter((event) => event.event === "synced").at(-1)?.data as { block: number })?.block ??
    -1;
  const caughtUp = async (client: StreamClient) => {
    const head = await indexer.waitForHead();
    await client.until((events) => lastSynced(events) >= Number(head), LOADED_MACHINE_MS);
  };
  /** The wallet's citizens as the API lists them, keyed as the stream assembles them. */
  const listing = async (token: string) => {
    const response = await get(
      balancer.url,
      `/v1/staking/citizens?address=${WALLET}&limit=100`,
      token,
    );
    const { items } = (await response.json()) as { items: { type: string; id: string }[] };
    return new Map(items.map((item) => [`${item.type}:${item.id}`, item]));
  };

  beforeAll(
    async () => {
      devnet = await startScenarioDevnet({ events: 200, seed: "api-instances" });
      actions = stakingActions(devnet.client, devnet.deployment);
      await actions.wallet(WALLET);
      await actions.mine([actions.mintS1(WALLET, 60_001n), actions.mintS2(WALLET, 60_002n)]);
      await actions.mine([actions.stake(WALLET, 1, 60_001n), actions.stake(WALLET, 2, 60_002n)]);
      indexer = await indexDevnet(devnet, {
        label: "api-instances",
        options: { followIntervalMs: 50, finalityDepth: undefined },
        follow: true,
      });
      tokens = createDatabase(indexer.database.url, { max: 2 });
      for (const name of NAMES) {
        const port = await freePort();
        const started = startCommand(["api/main.ts"], {
          DATABASE_URL: indexer.database.url,
          REDIS_URL: config.redis.url,
          QUEUE_PREFIX: indexer.redis.prefix,
          RPC_URL: devnet.node.rpcUrl,
          HOST: "127.0.0.1",
          PORT: String(port),
          // One stream per token: a resume is served only once the dead stream's lease is let go.
          STREAMS_PER_TOKEN: "1",
          LOG_LEVEL: "info",
        });
        instances.push({ name, port, process: started });
      }
      await Promise.all(
        instances.map((instance) =>
          instance.process.waitForLine(/"msg":"listening"/, 2 * LOADED_MACHINE_MS),
        ),
      );
      balancer = await startLoadBalancer(instances.map(({ name, port }) => ({ name, port })));
    },
    DEVNET_SETUP_MS + 4 * LOADED_MACHINE_MS,
  );

  afterAll(async () => {
    for (const client of opened) client.close();
    await balancer?.stop();
    for (const { process } of instances) {
      if (process.child.exitCode === null) process.child.kill("SIGTERM");
    }
    await Promise.all(instances.map(({ process }) => process.child.exited));
    redis.disconnect();
    await tokens?.close();
    await indexer?.cleanup();
    await devnet?.stop();
  });

  test("requests spread over every instance, as the answers and each one's metrics say", async () => {
    const { token } = await createToken(tokens.db, "spread");
    const servedBy = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const response = await get(balancer.url, `/v1/staking/citizens?address=${WALLET}`, token);
      expect(response.status).toBe(200);
      const name = response.headers.get(SERVED_BY)!;
      servedBy.set(name, (servedBy.get(name) ?? 0) + 1);
    }
    expect([...servedBy.keys()].sort()).toEqual(NAMES);
    for (const instance of instances) {
      const metrics = await (await fetch(`${direct(instance)}/metrics`)).text();
      const answered = metrics
        .split("\n")
        .filter((line) =>
          /api_requests_total\{.*route="\/v1\/staking\/citizens".*status="200"/.test(line),
        )
        .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
      expect(answered).toBe(servedBy.get(instance.name)!);
    }
  });

  test("a cached answer and its ETag mean the same on every instance, and none is stale after a move", async () => {
    const { token } = await createToken(tokens.db, "caches");
    const path = `/v1/staking/citizens/s1/60001?address=${WALLET}`;
    const answers = await Promise.all(
      instances.map((instance) => get(direct(instance), path, token)),
    );
    expect(answers.map((response) => response.status)).toEqual([200, 200, 200]);
    const etags = answers.map((response) => response.headers.get("etag"));
    const bodies = await Promise.all(answers.map((response) => response.text()));
    expect(new Set(etags).size).toBe(1);
    expect(new Set(bodies).size).toBe(1);
    // Each instance's cache is warm now; an ETag from one is current on the others.
    for (const instance of instances) {
      const again = await get(direct(instance), path, token, { "if-none-match": etags[0]! });
      expect(again.status).toBe(304);
    }

    const moved = await actions.mine([actions.stakeBytes(WALLET, 1, 60_001n, 2n * BYTE)]);
    await indexer.waitForHead();
    for (const instance of instances) {
      const fresh = await get(direct(instance), path, token, { "if-none-match": etags[0]! });
      expect(fresh.status).toBe(200);
      expect(BigInt(fresh.headers.get("x-indexed-block")!)).toBeGreaterThanOrEqual(moved);
      expect(await fresh.text()).not.toBe(bodies[0]);
    }
    expect(await indexer.mismatches([WALLET])).toEqual([]);
  });

  test("a token revoked is refused by every instance from the next request, and its stream ends", async () => {
    const { token, id } = await createToken(tokens.db, "revoked");
    const path = `/v1/staking/citizens?address=${WALLET}`;
    const live = await stream(token);
    expect(live.status).toBe(200);
    await live.until((events) => events.some((event) => event.event === "synced"));
    for (const instance of instances)
      expect((await get(direct(instance), path, token)).status).toBe(200);

    expect(await revokeToken(tokens.db, id)).toBe(true);
    for (const instance of instances)
      expect((await get(direct(instance), path, token)).status).toBe(401);
    const deadline = Date.now() + LOADED_MACHINE_MS;
    while (!live.ended && Date.now() < deadline) await Bun.sleep(20);
    expect(live.ended).toBe(true);
  });

  test(
    "a stream whose instance is killed -9 resumes on another with nothing lost or sent twice",
    async () => {
      const { token, id: tokenId } = await createToken(tokens.db, "failover");
      const first = await stream(token);
      expect(first.status).toBe(200);
      await caughtUp(first);
      const victim = instances.find((instance) => instance.name === first.headers.get(SERVED_BY))!;
      const [, leaseEnd] = await redis.zrange(
        `${indexer.redis.prefix}:api:streams:${tokenId}`,
        0,
        -1,
        "WITHSCORES",
      );

      // The chain moves throughout: a deposit a block, alternating between the two citizens.
      let mined = 0;
      const mining = (async () => {
        for (; mined < MOVES; mined++) {
          await actions.mine([
            actions.stakeBytes(
              WALLET,
              mined % 2 === 0 ? 1 : 2,
              mined % 2 === 0 ? 60_001n : 60_002n,
              BYTE,
            ),
          ]);
          await Bun.sleep(150);
        }
      })();
      const seenBefore = first.events.length;
      await first.until((events) => events.length >= seenBefore + 4, LOADED_MACHINE_MS);

      const killedAt = performance.now();
      victim.process.child.kill("SIGKILL");
      await victim.process.child.exited;
      while (!first.ended) await Bun.sleep(5);
      const endedMs = performance.now() - killedAt;

      // As a browser's EventSource: wait `retry`, reconnect with Last-Event-ID, again if refused.
      const resumeFrom = first.lastEventId!;
      let resumed: StreamClient;
      let refused = 0;
      for (;;) {
        await Bun.sleep(RECONNECT_MS);
        resumed = await stream(token, resumeFrom);
        if (resumed.status === 200) break;
        expect(resumed.status).toBe(429);
        refused++;
        expect(performance.now() - killedAt).toBeLessThan(2 * LOADED_MACHINE_MS);
      }
      const [seconds, micros] = await redis.time();
      const admittedAt = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      const admittedMs = performance.now() - killedAt;
      await resumed.until(
        (events) => events.some((event) => event.event === "synced"),
        LOADED_MACHINE_MS,
      );
      const syncedMs = performance.now() - killedAt;
      console.log(
        `kill -9 of the stream's instance: stream ended after ${Math.round(endedMs)} ms, ` +
          `resume served after ${Math.round(admittedMs)} ms (${refused} reconnects refused 429 first, ` +
          `each after the ${RECONNECT_MS} ms retry), first synced after ${Math.round(syncedMs)} ms`,
      );
      // Served by another instance, while the dead stream's lease still had time to run.
      expect(resumed.headers.get(SERVED_BY)).not.toBe(victim.name);
      expect(admittedAt).toBeLessThan(Number(leaseEnd));

      await mining;
      await caughtUp(resumed);
      // Nothing twice: every event is after the resume's block, and each changes what was held.
      const resumeBlock = Number(resumeFrom.split("-")[0]);
      const held = assemble(first.events);
      for (const event of resumed.events) {
        expect((event.data as { block: number }).block).toBeGreaterThan(resumeBlock);
        if (event.event === "citizen") {
          const { citizen } = event.data as { citizen: { type: string; id: string } };
          expect(held.get(`${citizen.type}:${citizen.id}`)).not.toEqual(citizen);
        }
        assemble([event], held);
      }
      const synced = [...first.events, ...resumed.events]
        .filter((event) => event.event === "synced")
        .map((event) => (event.data as { block: number }).block);
      expect(synced).toEqual([...synced].sort((a, b) => a - b));
      expect(new Set(synced).size).toBe(synced.length);
      // Nothing lost: what the client holds is what the API lists, and the tables equal the chain.
      expect(held).toEqual(await listing(token));
      expect(await indexer.mismatches()).toEqual([]);
      // The two instances left answer through the balancer.
      for (let i = 0; i < 4; i++) {
        const response = await get(balancer.url, `/v1/staking/citizens?address=${WALLET}`, token);
        expect(response.status).toBe(200);
        expect(response.headers.get(SERVED_BY)).not.toBe(victim.name);
      }
    },
    6 * LOADED_MACHINE_MS,
  );
});
