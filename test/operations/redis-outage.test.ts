/**
 * A long-running process (`worker`) through a Redis outage: it says once that it is taking
 * jobs, once that REDIS_URL is away, once that it is back, and nothing else but JSON lines: no
 * stack per reconnect attempt.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

/** ioredis's own reconnect policy (ours is its default): waits grow by 50 ms up to 2 s. */
const IOREDIS_MAX_RECONNECT_DELAY_MS = 2_000;

let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("outage");
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;

beforeAll(async () => {
  const upstream = new URL(redis.url);
  [devnet, database, proxy] = await Promise.all([
    startScenarioChain({ events: 10, seed: "redis-outage" }),
    createScratchDatabase("outage"),
    startTcpProxy({ host: upstream.hostname, port: Number(upstream.port || 6379) }),
  ]);
});

afterAll(async () => {
  await proxy?.stop();
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

test("a worker logs one line on start, one warning per Redis outage and one line on recovery", async () => {
  const worker = startCommand(["scripts/cli.ts", "worker"], {
    RPC_URL: devnet.node.rpcUrl,
    STAKER_ADDRESS: devnet.deployment.addresses.staker,
    DATABASE_URL: database.url,
    REDIS_URL: proxy.route(redis.url),
    QUEUE_PREFIX: redis.prefix,
    LOG_LEVEL: "info",
  });
  try {
    await worker.waitForLine(/worker taking chunk jobs/);
    proxy.cut();
    await worker.waitForLine(/REDIS_URL unreachable/);
    // Long enough for several reconnect attempts (ioredis waits 50 ms, 100 ms, … between them).
    await Bun.sleep(2_500);
    proxy.restore();
    await worker.waitForLine(
      /REDIS_URL reachable again/,
      IOREDIS_MAX_RECONNECT_DELAY_MS + LOADED_MACHINE_MS,
    );
  } finally {
    expect(await worker.stop()).toBe(0);
  }
  const entries = worker.lines.map((line) => JSON.parse(line) as { level: string; msg: string });
  const count = (pattern: RegExp) => entries.filter((entry) => pattern.test(entry.msg)).length;
  expect(count(/worker taking chunk jobs/)).toBe(1);
  expect(count(/REDIS_URL unreachable/)).toBe(1);
  expect(count(/REDIS_URL reachable again/)).toBe(1);
  expect(entries.filter((entry) => entry.level === "error")).toEqual([]);
});
