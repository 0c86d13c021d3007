/**
 * Prometheus scrapes both kinds of process while a backfill runs: the backfill's own
 * METRICS_PORT (its indexed-block gauge moves, RPC calls are counted by method) and the API's
 * /metrics (requests by route and status, latency, the database pool). Real anvil, Postgres,
 * Redis, and the commands as an operator starts them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freePort } from "../../devnet/anvil.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("metrics");

const settings = (overrides: Record<string, string> = {}) => ({
  RPC_URL: devnet.node.rpcUrl,
  STAKER_ADDRESS: devnet.deployment.addresses.staker,
  START_BLOCK: String(devnet.deployment.deployBlock),
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  FINALITY_DEPTH: "0",
  LOG_LEVEL: "warn",
  ...overrides,
});

/** The value of one sample (`name{labels}`, labels as printed) in Prometheus text, if present. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(port: number): Promise<string | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  [devnet, database] = await Promise.all([
    startScenarioChain({ events: 120, seed: "metrics" }),
    createScratchDatabase("metrics"),
  ]);
});

afterAll(async () => {
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

describe("metrics", () => {
  test("both endpoints answer during a backfill, and the indexed-block gauge moves", async () => {
    const [apiPort, metricsPort] = await Promise.all([freePort(), freePort()]);
    const api = startCommand(
      ["api/main.ts"],
      settings({ PORT: String(apiPort), DB_POOL_SIZE: "3", LOG_LEVEL: "info" }),
    );
    try {
      await api.waitForLine(/"msg":"listening"/);
      const to = (await devnet.client.getBlockNumber()) - 1n;
      // One block per job, one job at a time: the checkpoint climbs in steps a scrape can see.
      const backfill = startCommand(
        ["scripts/cli.ts", "backfill", "--to", String(to)],
        settings({ METRICS_PORT: String(metricsPort), CHUNK_SIZE: "1", CONCURRENCY: "1" }),
      );
      const indexedSeen = new Set<number>();
      let last: string | undefined;
      let apiText: string | undefined;
      while (backfill.child.exitCode === null) {
        const text = await scrape(metricsPort);
        if (text !== undefined) {
          last = text;
          const indexed = sample(text, "citizen_staking_indexed_block");
          if (indexed !== undefined) indexedSeen.add(indexed);
          await fetch(`http://127.0.0.1:${apiPort}/readyz`);
          apiText = (await scrape(apiPort)) ?? apiText;
        }
        await Bun.sleep(20);
      }
      expect(await backfill.stop()).toBe(0);

      // Seen at two or more heights: the gauge followed the checkpoint up.
      expect(indexedSeen.size).toBeGreaterThanOrEqual(2);
      expect(last).toBeDefined();
      const backfillText = last!;
      expect(
        sample(backfillText, 'citizen_staking_rpc_requests_total{method="eth_getLogs"}'),
      ).toBeGreaterThan(0);
      expect(
        sample(backfillText, 'citizen_staking_rpc_requests_total{method="eth_call"}'),
      ).toBeGreaterThan(0);
      expect(sample(backfillText, "citizen_staking_head_block")).toBeGreaterThanOrEqual(Number(to));
      expect(sample(backfillText, "citizen_staking_node_up")).toBe(1);
      expect(
        sample(backfillText, 'citizen_staking_events_indexed_total{queue="chunks"}'),
      ).toBeGreaterThan(0);
      expect(backfillText).toContain(
        'citizen_staking_job_duration_seconds_count{queue="chunks",outcome="completed"}',
      );

      expect(apiText).toBeDefined();
      expect(sample(apiText!, 'citizen_staking_db_pool_max_connections{pool="main"}')).toBe(3);
      expect(sample(apiText!, 'citizen_staking_db_pool_max_connections{pool="reads"}')).toBe(3);
      expect(apiText).toMatch(
        /citizen_staking_api_requests_total\{method="GET",route="\/readyz",status="(200|503)"\} [1-9]/,
      );
      expect(apiText).toContain(
        'citizen_staking_api_request_duration_seconds_bucket{le="0.1",method="GET",route="/readyz"}',
      );
      expect(apiText).toMatch(/citizen_staking_db_pool_connections\{state="active"\} [1-9]/);
    } finally {
      expect(await api.stop()).toBe(0);
    }
  });

  test("a METRICS_PORT already in use stops the process with one line and exit 2", async () => {
    const holder = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("held") });
    try {
      const result = await runCommand(
        ["scripts/cli.ts", "worker"],
        settings({ METRICS_PORT: String(holder.port) }),
        20_000,
      );
      expect(result.code).toBe(2);
      const errors = result.stderr.trim().split("\n");
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`METRICS_PORT ${holder.port}`);
      expect(errors[0]).toContain("already in use");
    } finally {
      holder.stop(true);
    }
  });
});
