/**
 * The operator's commands against real Postgres, Redis and anvil, and against closed ports: a
 * wrong setting or an unreachable service ends a one-shot command within seconds with one line
 * naming the variable and the real cause; bad input exits 2 and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AddressInfo, createServer } from "node:net";
import { Queue } from "bullmq";
import { freePort } from "../../devnet/anvil.ts";
import { QUEUE } from "../../indexer/queues/queues.ts";
import {
  CHECK_TIMEOUT_MS,
  checkPostgres,
  checkRedis,
  checkRpc,
  Misconfigured,
} from "../../lib/connection-checks.ts";
import { Unreachable } from "../../lib/fail.ts";
import { openRedis } from "../../lib/redis.ts";
import { checkChainSettings } from "../../ops/chain-settings.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { type CommandResult, runCommand } from "../support/commands.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("cli");
let closedPort: number;
let head: bigint;

/** Settings of a working deployment; each test breaks one of them. */
const settings = (overrides: Record<string, string | undefined> = {}) => ({
  RPC_URL: devnet.node.rpcUrl,
  STAKER_ADDRESS: devnet.deployment.addresses.staker,
  START_BLOCK: String(devnet.deployment.deployBlock),
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  CHAIN_ID: undefined,
  LOG_LEVEL: "warn",
  ...overrides,
});

/** The operator's way, `bun scripts/cli.ts`, whatever binary the run built. */
const cli = (args: string[], overrides: Record<string, string | undefined> = {}) =>
  runCommand(["scripts/cli.ts", ...args], settings(overrides), undefined, { source: true });

/** One line on stderr (no stack, no usage dump), mentioning each of `mentions`. */
function expectOneLine(result: CommandResult, code: number, mentions: string[]) {
  const stderr = result.stderr.trim();
  expect({ code: result.code, stderr }).toMatchObject({ code });
  expect(stderr.split("\n")[0]).toStartWith("error: ");
  expect(stderr).not.toMatch(/\n\s+at /);
  for (const mention of mentions) expect(stderr).toContain(mention);
}

beforeAll(async () => {
  [devnet, database, closedPort] = await Promise.all([
    startScenarioChain({ events: 30, seed: "cli-errors" }),
    createScratchDatabase("cli"),
    freePort(),
  ]);
  head = await devnet.client.getBlockNumber();
});

afterAll(async () => {
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

describe("block ranges", () => {
  test("backfill and reindex refuse empty, too early or too late ranges with exit 2 and queue nothing", async () => {
    const deploy = devnet.deployment.deployBlock;
    const results = await Promise.all([
      cli(["backfill", "--from", "100", "--to", "50", "--enqueue-only"]),
      cli(["backfill", "--to", String(head + 1_000n), "--enqueue-only"]),
      cli(["backfill", "--from", String(deploy - 1n), "--to", String(head), "--enqueue-only"]),
      cli(["reindex", "--from", "50", "--to", "40"]),
      cli(["reindex", "--from", String(deploy), "--to", String(head)]),
    ]);
    expectOneLine(results[0]!, 2, ["from 100 is after to 50"]);
    expectOneLine(results[1]!, 2, [`beyond the chain head ${head}`]);
    expectOneLine(results[2]!, 2, [`below the start block ${deploy}`]);
    expectOneLine(results[3]!, 2, ["from 50 is after to 40"]);
    expectOneLine(results[4]!, 2, ["nothing is indexed yet"]);

    const connection = openRedis({ url: redis.url }, "queues");
    const chunks = new Queue(QUEUE.chunks, { connection, prefix: redis.prefix });
    try {
      expect(await chunks.getJobCountByTypes("waiting", "delayed", "active", "failed")).toBe(0);
    } finally {
      await chunks.close();
      connection.disconnect();
    }
  });

  test("a backfill above the finality boundary is refused: those blocks are the follower's", async () => {
    // The devnet's own finalized block is 64 below its head.
    expectOneLine(await cli(["backfill", "--to", String(head), "--enqueue-only"]), 2, [
      "above the finality boundary",
    ]);
  });

  test("a backfill to the head is accepted; a reindex then refuses blocks beyond the indexed one", async () => {
    const backfill = await cli(["backfill", "--to", String(head - 2n)], { FINALITY_DEPTH: "0" });
    expect(backfill.code).toBe(0);
    expect(backfill.stdout).toContain(`blocks ${devnet.deployment.deployBlock}..${head - 2n}`);
    expectOneLine(await cli(["reindex", "--from", String(head - 5n), "--to", String(head)]), 2, [
      `beyond the indexed block ${head - 2n}`,
    ]);
  });
});

describe("settings that are malformed are refused before anything connects (exit 2)", () => {
  test("each URL variable names itself in one line", async () => {
    const cases = [
      ["DATABASE_URL", "garbage"],
      ["DATABASE_URL", "mysql://root@127.0.0.1/x"],
      ["REDIS_URL", "localhost:6379"],
      ["RPC_URL", "garbage"],
      ["RPC_URL", "ftp://127.0.0.1:8545"],
    ] as const;
    // lib/config.ts on its own: every command loads it first, and it is quick to start.
    const results = await Promise.all(
      cases.map(([variable, value]) =>
        runCommand(["lib/config.ts"], settings({ [variable]: value })),
      ),
    );
    results.forEach((result, index) => {
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toContain(cases[index]![0]);
    });
  });

  test("`DATABASE_URL=garbage bun run api` says so in one line and exits 2", async () => {
    const result = await runCommand(
      ["api/main.ts"],
      settings({ DATABASE_URL: "garbage" }),
      undefined,
      { source: true },
    );
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("DATABASE_URL");
  });
});

describe("services that are away or wrong are named with their real cause", () => {
  const databaseAt = (change: (url: URL) => void) => {
    const url = new URL(database.url);
    change(url);
    return url.toString();
  };

  test("Postgres: a closed port is unreachable; a missing database or an unknown role is refused", async () => {
    const closed = databaseAt((url) => {
      url.port = String(closedPort);
    });
    const missing = databaseAt((url) => {
      url.pathname = "/cs_no_such_database";
    });
    const role = databaseAt((url) => {
      url.username = "cs_no_such_role";
    });
    await expect(checkPostgres(closed)).rejects.toThrow(Unreachable);
    await expect(checkPostgres(closed)).rejects.toThrow(/^DATABASE_URL .*ECONNREFUSED/);
    await expect(checkPostgres(missing)).rejects.toThrow(Misconfigured);
    await expect(checkPostgres(missing)).rejects.toThrow(
      'database "cs_no_such_database" does not exist',
    );
    await expect(checkPostgres(missing, { databaseMayBeMissing: true })).resolves.toBeUndefined();
    await expect(checkPostgres(role)).rejects.toThrow(Misconfigured);
    await expect(checkPostgres(role)).rejects.toThrow('role "cs_no_such_role" does not exist');
    await expect(checkPostgres(database.url)).resolves.toBeUndefined();
  });

  test("Postgres behind something that accepts and drops every connection is unreachable, not a hang", async () => {
    // A pooler or proxy whose database is away: postgres.js alone would wait forever.
    const dropper = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => dropper.listen(0, "127.0.0.1", resolve));
    try {
      const dropping = databaseAt((url) => {
        url.port = String((dropper.address() as AddressInfo).port);
      });
      // Mostly no answer at all (then the check's own bound names it), sometimes a broken pipe.
      for (let attempt = 0; attempt < 3; attempt++) {
        const check = checkPostgres(dropping, { timeoutSeconds: 1 });
        await expect(check).rejects.toThrow(Unreachable);
        await expect(check).rejects.toThrow(/^DATABASE_URL .*: cannot connect: /);
      }
    } finally {
      dropper.close();
    }
  });

  test("Redis and the node on a closed port are unreachable, named, within seconds", async () => {
    const started = performance.now();
    await expect(checkRedis({ url: `redis://127.0.0.1:${closedPort}` })).rejects.toThrow(
      /^REDIS_URL .*ECONNREFUSED/,
    );
    await expect(checkRpc(`http://127.0.0.1:${closedPort}`)).rejects.toThrow(
      /^RPC_URL .*does not answer/,
    );
    // A closed port refuses at once; each check is bounded by its own timeout anyway.
    expect(performance.now() - started).toBeLessThan(
      CHECK_TIMEOUT_MS.redis + CHECK_TIMEOUT_MS.rpc + LOADED_MACHINE_MS,
    );
    await expect(checkRedis({ url: redis.url })).resolves.toBeUndefined();
  });

  test("a STAKER_ADDRESS with no contract, or with a contract that is not a staker, is refused", async () => {
    const chain = {
      rpcUrl: devnet.node.rpcUrl,
      rpcSource: "RPC_URL",
      stakerSource: "STAKER_ADDRESS",
      startBlock: async () => devnet.deployment.deployBlock,
    };
    await expect(
      checkChainSettings({ ...chain, staker: "0x000000000000000000000000000000000000dead" }),
    ).rejects.toThrow(/^STAKER_ADDRESS .*no contract/);
    await expect(
      checkChainSettings({ ...chain, staker: devnet.deployment.addresses.bytes }),
    ).rejects.toThrow(/^STAKER_ADDRESS .*not a NeoTokyoStaker/);
    await expect(
      checkChainSettings({ ...chain, staker: devnet.deployment.addresses.staker }),
    ).resolves.toBe(31337);
  });

  test("commands print those as one line: Redis away (exit 1, no ioredis traces), a missing database and a wrong staker (exit 2)", async () => {
    const redisUrl = `redis://127.0.0.1:${closedPort}`;
    const [status, enqueue, missing, staker] = await Promise.all([
      cli(["status"], { REDIS_URL: redisUrl }),
      cli(["backfill", "--enqueue-only"], { REDIS_URL: redisUrl }),
      cli(["token", "list"], {
        DATABASE_URL: databaseAt((url) => {
          url.pathname = "/cs_no_such_database";
        }),
      }),
      cli(["status"], { STAKER_ADDRESS: devnet.deployment.addresses.bytes }),
    ]);
    for (const result of [status, enqueue]) {
      expectOneLine(result, 1, ["REDIS_URL", "ECONNREFUSED"]);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      // Bounded by the Redis check's timeout, not a wait for Redis (which never ends).
      expect(result.ms).toBeLessThan(CHECK_TIMEOUT_MS.redis + LOADED_MACHINE_MS);
    }
    expectOneLine(missing, 2, ["DATABASE_URL", 'database "cs_no_such_database" does not exist']);
    expectOneLine(staker, 2, ["STAKER_ADDRESS", "not a NeoTokyoStaker"]);
  });
});

describe("small refusals", () => {
  test("a token needs a label: '' is refused with exit 2", async () => {
    const result = await cli(["token", "create", "--label", ""]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("a label is required");
    expect(result.stdout).toBe("");
  });
});

describe("status only reads", () => {
  test("status on a prefix nothing used yet creates no Redis key", async () => {
    const fresh = createScratchRedisPrefix("status");
    try {
      const result = await cli(["status"], { QUEUE_PREFIX: fresh.prefix });
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(devnet.deployment.addresses.staker);
      const connection = openRedis({ url: redis.url }, "queues");
      const keys = await connection.keys(`${fresh.prefix}:*`);
      connection.disconnect();
      expect(keys).toEqual([]);
    } finally {
      await fresh.clean();
    }
  });
});
