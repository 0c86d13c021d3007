/**
 * API_PROCESSES: one `bun api/main.ts` starts the others on its port (SO_REUSEPORT) and supervises
 * them. Real processes on one database and Redis prefix; a request goes to whichever process the
 * kernel hands its connection, and says which one answered (x-api-process).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { createToken, revokeToken } from "../../db/tokens.ts";
import { freePort, isPortFree } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { openRedis } from "../../lib/redis.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";
import { openStream, type StreamClient } from "./stream-client.ts";
import { createApiHarness, STAKER } from "./support.ts";

/** STREAMS_PER_TOKEN of the processes. */
const BOUND = 2;
/** New connections tried before a test gives up on reaching one process (each one is a coin toss). */
const TRIES = 200;

const CITIZEN = `/v1/staking/citizens/s1/7?address=${STAKER}`;

type Api = ReturnType<typeof startCommand>;

/**
 * `bun api/main.ts` whatever binary the run built: a process started from source starts the others
 * with its script's path (api/processes.ts ownCommand); test/operations/binary.test.ts covers the
 * binary's way.
 */
const SOURCE = { source: true };

describe("API processes sharing one port", () => {
  let harness: Awaited<ReturnType<typeof createApiHarness>>;
  const started: Api[] = [];
  const opened: StreamClient[] = [];
  const redis = openRedis(config.redis, "queues");

  const settings = (port: number, overrides: Record<string, string> = {}) => ({
    DATABASE_URL: harness.databaseUrl,
    REDIS_URL: config.redis.url,
    QUEUE_PREFIX: harness.redisPrefix,
    HOST: "127.0.0.1",
    PORT: String(port),
    RPC_URL: undefined,
    STREAMS_PER_TOKEN: String(BOUND),
    API_PROCESSES: "2",
    LOG_LEVEL: "info",
    ...overrides,
  });

  /** Two processes on a free port, both listening. */
  const startApi = async () => {
    const port = await freePort();
    const api = startCommand(["api/main.ts"], settings(port), SOURCE);
    started.push(api);
    await api.waitForLine(/"processSlot":0,.*"msg":"listening"/, 2 * LOADED_MACHINE_MS);
    await api.waitForLine(/"processSlot":1,.*"msg":"listening"/, 2 * LOADED_MACHINE_MS);
    return { api, port };
  };

  /** The pids slot 1 has been started with, in order. */
  const slotOnePids = (api: Api) =>
    api.lines
      .filter((line) => line.includes('"msg":"api process started"'))
      .map((line) => JSON.parse(line) as { slot: number; pid: number })
      .filter((entry) => entry.slot === 1)
      .map((entry) => entry.pid);

  /** GET on a new connection each time until the answer is process `slot`'s. */
  const getFrom = async (slot: string, port: number, path: string, token: string) => {
    for (let i = 0; i < TRIES; i++) {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { authorization: `Bearer ${token}`, connection: "close" },
      });
      if (response.headers.get("x-api-process") === slot) return response;
      await response.arrayBuffer();
    }
    throw new Error(`no answer from process ${slot} in ${TRIES} connections`);
  };

  const leasesOf = (tokenId: number) => `${harness.redisPrefix}:api:streams:${tokenId}`;

  /** A stream of `token` served by process `slot`; streams landing elsewhere are closed. */
  const streamFrom = async (slot: string, port: number, token: string, tokenId: number) => {
    for (let i = 0; i < TRIES; i++) {
      const held = await redis.zcard(leasesOf(tokenId));
      const client = await openStream(
        `http://127.0.0.1:${port}/v1/staking/citizens/stream?address=${STAKER}`,
        { authorization: `Bearer ${token}` },
      );
      expect(client.status).toBe(200);
      if (client.headers.get("x-api-process") === slot) {
        opened.push(client);
        await client.until((events) => events.some((event) => event.event === "synced"));
        return client;
      }
      client.close();
      // Its lease goes as the server sees the connection close: wait, so the bound stays free.
      while ((await redis.zcard(leasesOf(tokenId))) > held) await Bun.sleep(20);
    }
    throw new Error(`no stream from process ${slot} in ${TRIES} connections`);
  };

  const running = (pid: number) => existsSync(`/proc/${pid}`);

  const waitUntil = async (what: string, condition: () => boolean | Promise<boolean>) => {
    const deadline = Date.now() + 2 * LOADED_MACHINE_MS;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`not ${what} in time`);
      await Bun.sleep(50);
    }
  };

  beforeAll(async () => {
    harness = await createApiHarness();
    await harness.setCheckpoint(100n);
    await harness.insertCitizens([{ season: 1, citizenId: 7n }]);
  });

  afterAll(async () => {
    for (const client of opened) client.close();
    for (const api of started) if (api.child.exitCode === null) api.child.kill("SIGKILL");
    await Promise.all(started.map((api) => api.child.exited));
    redis.disconnect();
    await harness?.close();
  });

  test(
    "both answer on the port, both see a withdrawal and a revocation, and SIGTERM stops both with 0",
    async () => {
      const { api, port } = await startApi();
      const { token, id: tokenId } = await createToken(harness.db, "both");
      // Each process caches the citizen's answer.
      for (const slot of ["0", "1"]) {
        for (let i = 0; i < 2; i++) {
          expect((await getFrom(slot, port, CITIZEN, token)).status).toBe(200);
        }
      }

      await harness.removeCitizen(1, 7n);
      for (const slot of ["0", "1"]) {
        expect((await getFrom(slot, port, CITIZEN, token)).status).toBe(404);
      }
      await harness.insertCitizens([{ season: 1, citizenId: 7n }]);

      await revokeToken(harness.db, tokenId);
      for (const slot of ["0", "1"]) {
        expect((await getFrom(slot, port, CITIZEN, token)).status).toBe(401);
      }

      const [child] = slotOnePids(api);
      expect(await api.stop()).toBe(0);
      expect(running(child!)).toBe(false);
    },
    6 * LOADED_MACHINE_MS,
  );

  test(
    "a process killed -9 comes back, while a stream of the other keeps its lease",
    async () => {
      const { api, port } = await startApi();
      const { token, id: tokenId } = await createToken(harness.db, "leases");
      const kept = await streamFrom("0", port, token, tokenId);
      const [killed] = slotOnePids(api);
      process.kill(killed!, "SIGKILL");
      await waitUntil("started again", () => slotOnePids(api).length === 2);
      const [, restarted] = slotOnePids(api);
      expect(restarted).not.toBe(killed);
      await api.waitForLine(new RegExp(`"processSlot":1,.*"pid":${restarted},"msg":"listening"`));

      // The restarted process holds a stream too: it registers its own name, not its peer's.
      await streamFrom("1", port, token, tokenId);
      expect(await redis.zcard(leasesOf(tokenId))).toBe(BOUND);
      expect((await getFrom("0", port, CITIZEN, token)).status).toBe(200);
      // Each process counts both leases: one more stream is refused by either.
      for (const slot of ["0", "1"]) await refusedBy(slot, port, token);
      expect(kept.ended).toBe(false);
      expect(await api.stop()).toBe(0);
      expect(running(restarted!)).toBe(false);
    },
    6 * LOADED_MACHINE_MS,
  );

  /** Asks for one more stream of `token` until process `slot` answers; every answer is 429. */
  const refusedBy = async (slot: string, port: number, token: string) => {
    for (let i = 0; i < TRIES; i++) {
      const client = await openStream(
        `http://127.0.0.1:${port}/v1/staking/citizens/stream?address=${STAKER}`,
        { authorization: `Bearer ${token}`, connection: "close" },
      );
      opened.push(client);
      expect(client.status).toBe(429);
      if (client.headers.get("x-api-process") === slot) return;
    }
    throw new Error(`no answer from process ${slot} in ${TRIES} connections`);
  };

  test(
    "with METRICS_PORT each process serves its own figures on METRICS_PORT + its slot",
    async () => {
      // Two processes' metrics ports, neither the API's own: the OS may hand out the same or the
      // next port twice, and slot 1 listens on the port after METRICS_PORT.
      const port = await freePort();
      let metricsPort = await freePort();
      while (
        [metricsPort, metricsPort + 1].includes(port) ||
        !(await isPortFree(metricsPort + 1))
      ) {
        metricsPort = await freePort();
      }
      const api = startCommand(
        ["api/main.ts"],
        settings(port, { METRICS_PORT: String(metricsPort), METRICS_HOST: "127.0.0.1" }),
        SOURCE,
      );
      started.push(api);
      await api.waitForLine(/"processSlot":1,.*"msg":"listening"/, 2 * LOADED_MACHINE_MS);
      const { token } = await createToken(harness.db, "metrics");
      for (let i = 0; i < 3; i++) await getFrom("1", port, CITIZEN, token);
      const scrape = async (slot: number) =>
        (await fetch(`http://127.0.0.1:${metricsPort + slot}/metrics`)).text();
      const [first, second] = await Promise.all([scrape(0), scrape(1)]);
      expect(first).toContain('citizen_staking_api_cache_max_entries{api_process="0"}');
      expect(first).not.toContain('api_process="1"');
      // The requests slot 1 answered are counted in its own figures only.
      const answered =
        /citizen_staking_api_requests_total\{[^}]*route="\/v1\/staking\/citizens\/s1\/:id"[^}]*api_process="1"[^}]*\} (\d+)/;
      expect(Number(answered.exec(second)?.[1])).toBe(3);
      expect(answered.exec(first)).toBeNull();
      expect(await api.stop()).toBe(0);
    },
    6 * LOADED_MACHINE_MS,
  );

  test(
    "the first process killed -9 leaves no other running",
    async () => {
      const { api } = await startApi();
      const [child] = slotOnePids(api);
      api.child.kill("SIGKILL");
      await api.child.exited;
      await waitUntil("stopped", () => !running(child!));
    },
    6 * LOADED_MACHINE_MS,
  );

  test("API_PROCESSES that is not a whole number from 1 is one line and exit 2", async () => {
    const result = await runCommand(
      ["api/main.ts"],
      settings(await freePort(), { API_PROCESSES: "0" }),
      LOADED_MACHINE_MS,
      SOURCE,
    );
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toEqual([
      'configuration error: API_PROCESSES must be a whole number from 1 to 256, got "0"',
    ]);
  });

  test("a port held by another server stops them with one line, even a shared one", async () => {
    const holder = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      reusePort: true,
      fetch: () => new Response("held"),
    });
    try {
      const result = await runCommand(
        ["api/main.ts"],
        settings(holder.port!),
        LOADED_MACHINE_MS,
        SOURCE,
      );
      expect(result.code).not.toBe(0);
      const errors = result.stderr.trim().split("\n");
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`PORT ${holder.port}`);
      expect(errors[0]).toContain("already in use");
      expect(await (await fetch(`http://127.0.0.1:${holder.port}/`)).text()).toBe("held");
    } finally {
      await holder.stop();
    }
  });
});
