/**
 * `backfill` and `reindex` as an operator runs them: both show progress, and the throughput
 * counts the events this run wrote, never the ones it found already in the tables.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { freePort } from "../../devnet/anvil.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runCommand } from "../support/commands.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("progress");
let from: bigint;
let to: bigint;
let eventsInRange: number;

const cli = (args: string[], overrides: Record<string, string> = {}) =>
  runCommand(["scripts/cli.ts", ...args], {
    RPC_URL: devnet.node.rpcUrl,
    STAKER_ADDRESS: devnet.deployment.addresses.staker,
    START_BLOCK: String(devnet.deployment.deployBlock),
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    FINALITY_DEPTH: "0",
    // Several chunks, so a reindex is seen finishing chunk by chunk.
    CHUNK_SIZE: "4",
    LOG_LEVEL: "warn",
    ...overrides,
  });

/** The "<n> events indexed … (<rate> events/s)" figures of a command's closing line. */
function closingFigures(stdout: string) {
  const match = stdout.match(/: (\d+) events indexed(?: again)? in [\d.]+ s \((\d+) events\/s\)/);
  expect(match).not.toBeNull();
  return { events: Number(match![1]), rate: Number(match![2]) };
}

async function citizenStakes() {
  const sql = postgres(database.url, { max: 1 });
  try {
    const [row] = await sql<{ count: number }[]>`select count(*)::int as count from citizen_stakes`;
    return row!.count;
  } finally {
    await sql.end();
  }
}

beforeAll(async () => {
  [devnet, database] = await Promise.all([
    startScenarioChain({ events: 40, seed: "progress" }),
    createScratchDatabase("progress"),
  ]);
  from = devnet.deployment.deployBlock;
  to = (await devnet.client.getBlockNumber()) - 1n;
});

afterAll(async () => {
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

describe("progress of backfill and reindex", () => {
  test("a first backfill reports every event it indexed", async () => {
    const result = await cli(["backfill", "--to", String(to)]);
    expect(result.code).toBe(0);
    const sql = postgres(database.url, { max: 1 });
    try {
      const [row] = await sql<{ count: number }[]>`
        select count(*)::int as count from staker_events
        where block_number between ${from.toString()} and ${to.toString()}`;
      eventsInRange = row!.count;
    } finally {
      await sql.end();
    }
    expect(eventsInRange).toBeGreaterThan(0);
    expect(result.stderr).toMatch(new RegExp(`blocks ${to - from + 1n}/${to - from + 1n}, events`));
    const figures = closingFigures(result.stdout);
    expect(figures.events).toBe(eventsInRange);
    expect(figures.rate).toBeGreaterThan(0);
    expect(result.stdout).not.toContain("were indexed before");
    // The backfill's own workers fetched every log and read every stake: their calls are counted.
    expect(result.stdout).toMatch(
      /RPC calls by this process: \d+ \([\d.]+ per event\): .*eth_getLogs \d+/,
    );
    // The same calls, recorded in Postgres when the process closed: `status` divides them by
    // what is stored.
    const total = Number(result.stdout.match(/RPC calls by this process: (\d+)/)![1]);
    const ethCalls = Number(result.stdout.match(/eth_call (\d+)/)?.[1] ?? 0);
    const status = await cli(["status"]);
    expect(status.code).toBe(0);
    const stakes = await citizenStakes();
    expect(status.stdout).toMatch(
      new RegExp(
        `rpc calls\\s+${total} \\(${(total / eventsInRange).toFixed(3)} per event\\); eth_call ${ethCalls} \\(${(ethCalls / stakes).toFixed(3)} per citizen stake\\); .*eth_getLogs \\d+`,
      ),
    );
  });

  test("a backfill over indexed blocks reports none indexed (0 events/s) and what it found", async () => {
    const result = await cli(["backfill", "--from", String(from), "--to", String(to)]);
    expect(result.code).toBe(0);
    expect(closingFigures(result.stdout)).toEqual({ events: 0, rate: 0 });
    expect(result.stdout).toContain(`; ${eventsInRange} were indexed before`);
  });

  test("a reindex shows its progress chunk by chunk and counts the events it wrote again", async () => {
    const result = await cli(["reindex", "--from", String(from), "--to", String(to)]);
    expect(result.code).toBe(0);
    const total = to - from + 1n;
    expect(result.stderr).toMatch(new RegExp(`blocks ${total}/${total}, events ${eventsInRange},`));
    expect(closingFigures(result.stdout).events).toBe(eventsInRange);
    expect(result.stdout).toContain(`reindex done:`);
    expect(result.stdout).toContain(`blocks ${from}..${to}`);
  });
});

describe("status with one service away shows what the others hold", () => {
  /** The value `status` prints for `label`. */
  const field = (stdout: string, label: string) =>
    stdout.match(new RegExp(`^${label} {2,}(.*)$`, "m"))?.[1];
  const away = async () => `127.0.0.1:${await freePort()}`;

  test("the node away: Postgres, Redis, the checkpoint and the queues, and the node's failure in one line", async () => {
    const node = await away();
    const result = await cli(["status"], { RPC_URL: `http://${node}` });
    const stderr = result.stderr.trim().split("\n");
    expect({ code: result.code, lines: stderr.length }).toEqual({ code: 1, lines: 1 });
    expect(stderr[0]).toStartWith(
      `error: RPC_URL (http://${node}) eth_chainId: the node does not answer`,
    );
    expect(stderr[0]).toContain("ECONNREFUSED");
    const { stdout } = result;
    expect(field(stdout, "node")).toBe(`FAILED: ${stderr[0]!.slice("error: ".length)}`);
    expect(field(stdout, "staker")).toBe(`${devnet.deployment.addresses.staker} (chain 31337)`);
    expect([field(stdout, "postgres"), field(stdout, "redis")]).toEqual(["ok", "ok"]);
    expect(field(stdout, "head")).toStartWith("unknown (the node cannot be read");
    expect(field(stdout, "indexed block")).toBe(String(to));
    expect(field(stdout, "lag")).toStartWith("unknown (the node cannot be read");
    expect(field(stdout, "chunk jobs")).toBe("waiting 0, active 0, delayed 0, failed 0");
    expect(field(stdout, "follow jobs")).toBe("active 0, failed 0");
    expect(field(stdout, "rpc calls")).toMatch(/^\d+ \([\d.]+ per event\)/);
  });

  test("Postgres away: the node's head and the queues; Redis away: the head and the checkpoint", async () => {
    const [postgresAway, redisAway] = await Promise.all([
      cli(["status"], { DATABASE_URL: `postgres://postgres@${await away()}/citizen_staking` }),
      cli(["status"], { REDIS_URL: `redis://${await away()}` }),
    ]);
    const head = (await devnet.client.getBlockNumber()).toString();
    for (const [result, variable] of [
      [postgresAway, "DATABASE_URL"],
      [redisAway, "REDIS_URL"],
    ] as const) {
      const stderr = result.stderr.trim().split("\n");
      expect({ code: result.code, lines: stderr.length }).toEqual({ code: 1, lines: 1 });
      expect(stderr[0]).toStartWith(`error: ${variable} (`);
      expect(stderr[0]).toContain("ECONNREFUSED");
      expect(field(result.stdout, "node")).toBe("ok");
      expect(field(result.stdout, "head")).toBe(head);
    }
    expect(field(postgresAway.stdout, "postgres")).toStartWith("FAILED: DATABASE_URL (");
    expect(field(postgresAway.stdout, "indexed block")).toStartWith("unknown (postgres");
    expect(field(postgresAway.stdout, "follower")).toStartWith("unknown (postgres");
    expect(field(postgresAway.stdout, "chunk jobs")).toBe(
      "waiting 0, active 0, delayed 0, failed 0",
    );
    expect(field(redisAway.stdout, "redis")).toStartWith("FAILED: REDIS_URL (");
    expect(field(redisAway.stdout, "indexed block")).toBe(String(to));
    expect(field(redisAway.stdout, "chunk jobs")).toStartWith("unknown (redis");
  });
});
