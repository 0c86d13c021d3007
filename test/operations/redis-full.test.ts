/**
 * Redis full: `maxmemory` reached under `noeviction`, so every write is answered "OOM command not
 * allowed". The connection stays up; each worker poll and each follow tick fails. A follower and
 * a worker say so once, and once when Redis takes writes again: not a line per attempt (105,166
 * identical lines in 70 s before). The Redis is a private server, its memory limit ours to set.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { createDatabase } from "../../db/client.ts";
import { freePort } from "../../devnet/anvil.ts";
import { createIndexerStore } from "../../indexer/store/index.ts";
import { openRedisOnce } from "../../lib/redis.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

/** How long Redis stays full: long enough for thousands of refused polls and ticks. */
const FULL_MS = 8_000;

let devnet: ScenarioDevnet;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let server: Subprocess;
let redisUrl: string;

beforeAll(async () => {
  const port = await freePort();
  server = Bun.spawn(
    ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", ""],
    { stdout: "ignore", stderr: "ignore" },
  );
  redisUrl = `redis://127.0.0.1:${port}`;
  [devnet, database] = await Promise.all([
    startScenarioDevnet({ events: 10, seed: "redis-full" }),
    createScratchDatabase("redis_full"),
  ]);
});

afterAll(async () => {
  server?.kill("SIGKILL");
  await devnet?.stop();
  await database?.drop();
});

/** CONFIG SET on the private server. */
async function configSet(name: string, value: string) {
  const redis = openRedisOnce({ url: redisUrl }, 2_000);
  await redis.connect();
  try {
    if (name === "maxmemory" && value === "full") {
      // Well under what it holds, so keys expiring meanwhile do not make room: every write that
      // may grow it is refused.
      const info = await redis.info("memory");
      const used = Number(/used_memory:(\d+)/.exec(info)?.[1]);
      value = String(Math.floor(used / 2));
    }
    await redis.config("SET", name, value);
  } finally {
    redis.disconnect();
  }
}

/** How many commands the private server has refused for want of memory since it started. */
async function refusedWrites(): Promise<number> {
  const redis = openRedisOnce({ url: redisUrl }, 2_000);
  await redis.connect();
  try {
    return Number(/errorstat_OOM:count=(\d+)/.exec(await redis.info("errorstats"))?.[1] ?? 0);
  } finally {
    redis.disconnect();
  }
}

test("a full Redis is one warning from the follower and the worker, and one line when it takes writes again", async () => {
  const env = {
    RPC_URL: devnet.node.rpcUrl,
    STAKER_ADDRESS: devnet.deployment.addresses.staker,
    START_BLOCK: String(devnet.deployment.deployBlock),
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: "redis-full",
    CHAIN_ID: undefined,
    RPC_WS_URL: undefined,
    METRICS_PORT: undefined,
    LOG_LEVEL: "info",
  };
  await configSet("maxmemory-policy", "noeviction");
  const follow = startCommand(["scripts/cli.ts", "follow", "--no-migrate"], env);
  const worker = startCommand(["scripts/cli.ts", "worker"], env);
  const processes = { follow, worker };
  try {
    // Running, not starting: a start that meets a full Redis fails (exit 1), which is not this.
    await follow.waitForLine(/leading the follower/, 60_000);
    // Its start-up writes (schedulers, the metadata round) done.
    await Bun.sleep(2_000);
    await worker.waitForLine(/worker taking chunk jobs/, 60_000);
    const before = { follow: follow.lines.length, worker: worker.lines.length };
    const refusedBefore = await refusedWrites();
    await configSet("maxmemory", "full");
    await follow.waitForLine(/REDIS_URL is full/, LOADED_MACHINE_MS);
    await Bun.sleep(FULL_MS);
    await configSet("maxmemory", "0");
    // Refusals are retried at a pace, not at once: a BullMQ worker left to itself asks again the
    // moment a poll is refused (72,176 refusals in these 8 s, a core spun), so it pauses.
    expect(await refusedWrites()).toBeLessThan(refusedBefore + FULL_MS / 100);
    await follow.waitForLine(/REDIS_URL takes writes again/, LOADED_MACHINE_MS);
    // And the follower, paused meanwhile, follows again: a block mined now is indexed.
    await devnet.client.mine({ blocks: 1 });
    const head = await devnet.client.getBlockNumber();
    const checks = createDatabase(database.url, { max: 1 });
    try {
      const deadline = Date.now() + LOADED_MACHINE_MS;
      while (((await createIndexerStore(checks.db).checkpoint())?.indexedBlock ?? -1n) < head) {
        if (Date.now() > deadline)
          throw new Error("the follower did not index after Redis had room");
        await Bun.sleep(100);
      }
    } finally {
      await checks.close();
    }
    for (const [name, process] of Object.entries(processes)) {
      const during = process.lines
        .slice(before[name as keyof typeof before])
        .map((line) => JSON.parse(line) as { level: string; msg: string })
        .filter((entry) => entry.level !== "info" && entry.level !== "debug");
      // The warning, and perhaps a role's own line (a lease not renewed): a handful, never more.
      expect({ name, lines: during.length <= 4 ? "a handful" : during }).toEqual({
        name,
        lines: "a handful",
      });
      expect(during.filter((entry) => entry.level === "error")).toEqual([]);
      expect(during.filter((entry) => /is full/.test(entry.msg)).length).toBeLessThanOrEqual(1);
    }
  } finally {
    await configSet("maxmemory", "0").catch(() => {});
    // Every process stopped before any is judged: none outlives a failed test.
    const ended = [];
    for (const [name, process] of Object.entries(processes)) {
      const code = await process.stop();
      ended.push({ name, code, output: code === 0 ? "" : process.lines.join("\n") });
    }
    for (const { name, code, output } of ended) {
      expect({ name, code, output }).toEqual({ name, code: 0, output: "" });
    }
  }
}, 180_000);

test("a follower that starts while Redis is full waits for room, then leads", async () => {
  const env = {
    RPC_URL: devnet.node.rpcUrl,
    STAKER_ADDRESS: devnet.deployment.addresses.staker,
    START_BLOCK: String(devnet.deployment.deployBlock),
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: "redis-full-at-start",
    CHAIN_ID: undefined,
    RPC_WS_URL: undefined,
    METRICS_PORT: undefined,
    LOG_LEVEL: "info",
  };
  await configSet("maxmemory-policy", "noeviction");
  await configSet("maxmemory", "full");
  const follow = startCommand(["scripts/cli.ts", "follow", "--no-migrate"], env);
  try {
    await follow.waitForLine(/REDIS_URL is full/, 60_000);
    await Bun.sleep(3_000);
    expect(follow.child.exitCode).toBeNull();
    await configSet("maxmemory", "0");
    await follow.waitForLine(/leading the follower/, 2 * LOADED_MACHINE_MS);
  } finally {
    await configSet("maxmemory", "0").catch(() => {});
    const code = await follow.stop();
    expect({ code, output: code === 0 ? "" : follow.lines.join("\n") }).toEqual({
      code: 0,
      output: "",
    });
  }
}, 180_000);
