/**
 * The per-token stream bound after an API process dies with its streams open (kill -9): its
 * clients reconnect with Last-Event-ID, to the same instance restarted or to another one, and are
 * served at once rather than refused with 429 until the dead process's stream leases run out.
 * Real API processes (`bun api/main.ts`) on one database and Redis prefix.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createToken } from "../../db/tokens.ts";
import { freePort } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { openRedis } from "../../lib/redis.ts";
import { startCommand } from "../support/commands.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";
import { openStream, type StreamClient } from "./stream-client.ts";
import { createApiHarness, STAKER } from "./support.ts";

/** STREAMS_PER_TOKEN of the processes: the killed one holds all of them. */
const BOUND = 2;
/** The lease of a stream whose instance never renews it again (api/modules/stream/slots.ts). */
const LEASE_MS = 30_000;

describe("streams of an API process killed -9", () => {
  let api: Awaited<ReturnType<typeof createApiHarness>>;
  const processes: ReturnType<typeof startCommand>[] = [];
  const opened: StreamClient[] = [];
  const redis = openRedis(config.redis, "queues");

  const startApi = async (port: number) => {
    const child = startCommand(["api/main.ts"], {
      DATABASE_URL: api.databaseUrl,
      REDIS_URL: config.redis.url,
      QUEUE_PREFIX: api.redisPrefix,
      HOST: "127.0.0.1",
      PORT: String(port),
      RPC_URL: undefined,
      STREAMS_PER_TOKEN: String(BOUND),
      LOG_LEVEL: "info",
    });
    processes.push(child);
    await child.waitForLine(/"msg":"listening"/, 2 * LOADED_MACHINE_MS);
    return child;
  };

  const stream = async (port: number, token: string, lastEventId?: string) => {
    const client = await openStream(
      `http://127.0.0.1:${port}/v1/staking/citizens/stream?address=${STAKER}`,
      {
        authorization: `Bearer ${token}`,
        ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }),
      },
    );
    opened.push(client);
    return client;
  };

  /** Opens the token's every stream on `port`, each up to its first `synced`. */
  const fill = async (port: number, token: string) => {
    const clients: StreamClient[] = [];
    for (let i = 0; i < BOUND; i++) {
      const client = await stream(port, token);
      expect(client.status).toBe(200);
      await client.until((events) => events.some((event) => event.event === "synced"));
      clients.push(client);
    }
    expect((await stream(port, token)).status).toBe(429);
    return clients;
  };

  const kill = async (child: ReturnType<typeof startCommand>) => {
    child.child.kill("SIGKILL");
    await child.child.exited;
  };

  /** Redis' clock, which the leases' ends are written in. */
  const redisNow = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  beforeAll(async () => {
    api = await createApiHarness();
    await api.setCheckpoint(100n);
    await api.insertCitizens([{ season: 1, citizenId: 7n }]);
  });

  afterAll(async () => {
    for (const client of opened) client.close();
    for (const child of processes) if (child.child.exitCode === null) child.child.kill("SIGKILL");
    await Promise.all(processes.map((child) => child.child.exited));
    redis.disconnect();
    await api?.close();
  });

  test(
    "restarted on its port, it serves the resumes at once",
    async () => {
      const { token } = await createToken(api.db, "restart");
      const port = await freePort();
      await startApi(port);
      const clients = await fill(port, token);
      await kill(processes.at(-1)!);

      await startApi(port);
      for (const client of clients) {
        const resumed = await stream(port, token, client.lastEventId);
        expect(resumed.status).toBe(200);
        await resumed.until((events) => events.some((event) => event.event === "synced"));
        // Placed at its block (the rows were written by hand, without their events: the
        // baseline at a block is read from the event log, so the citizen comes again).
        expect(resumed.events.map((event) => event.event)).not.toContain("reset");
        expect(resumed.lastEventId).toBe(client.lastEventId);
      }
      // The bound holds for the restarted instance's own streams.
      expect((await stream(port, token)).status).toBe(429);
    },
    6 * LOADED_MACHINE_MS,
  );

  test(
    "another instance serves the resumes before the dead streams' leases would have run out",
    async () => {
      const { token, id: tokenId } = await createToken(api.db, "failover");
      const [deadPort, livePort] = await Promise.all([freePort(), freePort()]);
      await startApi(livePort);
      await startApi(deadPort);
      const clients = await fill(deadPort, token);
      const leases = `${api.redisPrefix}:api:streams:${tokenId}`;
      const leaseEnds = (await redis.zrange(leases, 0, -1, "WITHSCORES"))
        .filter((_, index) => index % 2 === 1)
        .map(Number);
      expect(leaseEnds).toHaveLength(BOUND);

      const killedAt = performance.now();
      await kill(processes.at(-1)!);
      let resumed = await stream(livePort, token, clients[0]!.lastEventId);
      while (
        resumed.status === 429 &&
        performance.now() - killedAt < LEASE_MS + LOADED_MACHINE_MS
      ) {
        await Bun.sleep(100);
        resumed = await stream(livePort, token, clients[0]!.lastEventId);
      }
      const admittedAt = await redisNow();
      const waited = performance.now() - killedAt;
      console.log(`kill -9 to the other instance serving the resume: ${Math.round(waited)} ms`);
      expect(resumed.status).toBe(200);
      expect(admittedAt).toBeLessThan(Math.min(...leaseEnds));
      await resumed.until((events) => events.some((event) => event.event === "synced"));
      expect(resumed.events.map((event) => event.event)).not.toContain("reset");
      // The second dead stream resumes too; past them the bound holds.
      expect((await stream(livePort, token, clients[1]!.lastEventId)).status).toBe(200);
      expect((await stream(livePort, token)).status).toBe(429);
    },
    6 * LOADED_MACHINE_MS,
  );
});
