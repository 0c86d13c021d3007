/**
 * Read API throughput against two bare baselines, each server in its own process, under the same
 * load (autocannon, fixed connections, random existing (address, id) pairs, a valid token):
 *
 *   (a) Bun.serve answering a constant JSON body the size of a real record;
 *   (b) Bun.serve doing the same single-row primary-key query with postgres.js, same pool size;
 *   (c) the API (api/main.ts) for one S1 citizen, one S2 citizen, and a wallet's listing.
 *
 * The database is the cached scenario indexed once (kept as its own Postgres database).
 *
 * `bun bench/api.ts [--duration 10] [--connections 64] [--events 100000] [--smoke]`
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import autocannon from "autocannon";
import postgres from "postgres";
import { createDatabase } from "../db/client.ts";
import { ensureDatabase, runMigrations } from "../db/migrate.ts";
import { createToken } from "../db/tokens.ts";
import { freePort } from "../devnet/anvil.ts";
import { createIndexer } from "../indexer/indexer.ts";
import { config } from "../lib/config.ts";
import { createScratchRedisPrefix } from "../scratch/redis.ts";
import { readFlags, runMain, wholeNumber } from "./support/flags.ts";
import {
  type Child,
  cpuSecondsOf,
  cpuSecondsOfCommand,
  spawnBun,
  trackPeakRss,
} from "./support/processes.ts";
import { log, machine, RESULTS_DIR, round, table, writeReport } from "./support/report.ts";
import { defaultWallets, loadScenario, type ScenarioSpec } from "./support/scenario-cache.ts";

export class ApiBenchFailed extends Error {
  override name = "ApiBenchFailed";
}

function databaseUrl(name: string): string {
  const url = new URL(config.databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The scenario indexed into a database of its own, kept between runs: `bench_cache` holds one
 * row once indexing finished, so a half-built database is rebuilt rather than used.
 */
async function indexedDatabase(spec: ScenarioSpec): Promise<string> {
  const name = `cs_bench_api_${spec.seed}_${spec.events}_${spec.wallets}`.toLowerCase();
  const url = databaseUrl(name);
  await ensureDatabase(url);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [cached] = await sql<{ done: boolean }[]>`
      select to_regclass('bench_cache') is not null as done`;
    if (cached?.done) return url;
  } finally {
    await sql.end({ timeout: 5 });
  }
  await runMigrations(url);
  const { scenario, node } = await loadScenario(spec, log);
  const redis = createScratchRedisPrefix("bench_api");
  const staker = scenario.deployment.addresses.staker;
  // One worker process does the chunks, so its job logs go to its log file, not this table.
  const worker = spawnBun("api-bench-indexer", ["scripts/cli.ts", "worker"], {
    RPC_URL: node.rpcUrl,
    STAKER_ADDRESS: staker,
    CHAIN_ID: String(scenario.deployment.chainId),
    DATABASE_URL: url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    CHUNK_SIZE: "4",
    LOG_LEVEL: "info",
  });
  try {
    const indexer = await createIndexer({
      rpcUrl: node.rpcUrl,
      databaseUrl: url,
      redisUrl: redis.url,
      queuePrefix: redis.prefix,
      staker,
      chainId: scenario.deployment.chainId,
      chunkSize: 4,
      concurrency: 1,
      confirmations: 0,
      followIntervalMs: 200,
      maxLogRange: 10_000,
      // The cached chain never reorgs: chunk jobs may index right up to its head.
      finalityDepth: 0,
    });
    try {
      log(`indexing the scenario once into ${name} (worker log: ${worker.logFile})`);
      await indexer.enqueueBackfill({
        startBlock: scenario.deployment.deployBlock,
        to: scenario.head,
      });
      for (;;) {
        const checkpoint = await indexer.store.checkpoint();
        if (checkpoint && checkpoint.indexedBlock >= scenario.head) break;
        const [failed] = await indexer.queues.chunks.getFailed(0, 0);
        if (failed) throw new ApiBenchFailed(`chunk ${failed.id} failed: ${failed.failedReason}`);
        worker.assertAlive();
        await Bun.sleep(100);
      }
      await indexer.database.client`create table bench_cache (head bigint not null)`;
      await indexer.database.client`insert into bench_cache values (${scenario.head.toString()})`;
    } finally {
      await indexer.close();
    }
  } finally {
    await worker.stop();
    await redis.clean();
    await node.stop();
  }
  return url;
}

type Target = {
  key: string;
  label: string;
  server: "constant" | "primary-key" | "api";
  path: () => string;
};

async function waitForServer(url: string, child: Child) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    child.assertAlive();
    try {
      await (await fetch(url)).arrayBuffer();
      return;
    } catch {
      if (Date.now() > deadline) throw new ApiBenchFailed(`${child.label} did not answer ${url}`);
      await Bun.sleep(50);
    }
  }
}

function pick<T>(items: T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

async function load(
  base: string,
  token: string,
  path: () => string,
  connections: number,
  duration: number,
) {
  return autocannon({
    url: base,
    connections,
    duration,
    headers: { authorization: `Bearer ${token}` },
    requests: [{ setupRequest: (request) => ({ ...request, path: path() }) }],
  });
}

async function main() {
  const flags = readFlags({
    duration: { type: "string" },
    connections: { type: "string", default: "64" },
    warmup: { type: "string" },
    events: { type: "string" },
    seed: { type: "string", default: "bench" },
    "cpu-prof": { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
  });
  const smoke = flags.smoke === true;
  const duration = wholeNumber("duration", flags.duration ?? (smoke ? 1 : 10));
  const warmup = wholeNumber("warmup", flags.warmup ?? (smoke ? 0 : 2), 0);
  const connections = wholeNumber("connections", flags.connections);
  const events = wholeNumber("events", flags.events ?? (smoke ? 2_000 : 100_000));
  const spec = { seed: String(flags.seed), events, wallets: defaultWallets(events) };
  const startedAt = new Date().toISOString();

  const url = await indexedDatabase(spec);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const rows = await sql<{ season: number; id: string; staker: string }[]>`
    select season, citizen_id::text as id, staker from staked_citizens`;
  await sql.end({ timeout: 5 });
  const s1 = rows.filter((row) => row.season === 1);
  const s2 = rows.filter((row) => row.season === 2);
  const wallets = [...new Set(rows.map((row) => row.staker))];
  if (s1.length === 0 || s2.length === 0) throw new ApiBenchFailed("no staked citizens indexed");
  log(
    `${rows.length} staked citizens (${s1.length} S1, ${s2.length} S2) over ${wallets.length} wallets`,
  );

  const handle = createDatabase(url, { max: 1 });
  const { token } = await createToken(handle.db, `bench-api-${startedAt}`);
  await handle.close();

  const citizenPath = (season: 1 | 2) => () => {
    const row = pick(season === 1 ? s1 : s2);
    return `/v1/staking/citizens/s${season}/${row.id}?address=${row.staker}`;
  };
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const serverSettings = {
    DATABASE_URL: url,
    REDIS_URL: config.redisUrl,
    QUEUE_PREFIX: `cs-bench-api-${process.pid}`,
    HOST: "127.0.0.1",
    PORT: String(port),
    DB_POOL_SIZE: String(config.api.poolSize),
    // Load from one token far past any real limit; the limiter's Redis round trip still runs.
    RATE_LIMIT_PER_MINUTE: "1000000000",
    LOG_LEVEL: "warn",
  };
  let profiles = 0;
  const start = (server: Target["server"], bodyFile?: string) => {
    const profile =
      flags["cpu-prof"] === true
        ? [
            "--cpu-prof-md",
            "--cpu-prof-dir=bench/results/profiles",
            `--cpu-prof-name=api-bench-${server}-${profiles++}.md`,
          ]
        : [];
    const args =
      server === "api"
        ? [...profile, "api/main.ts"]
        : server === "constant"
          ? ["bench/servers/constant-json.ts", bodyFile!]
          : ["bench/servers/primary-key.ts"];
    return spawnBun(`api-bench-${server}`, args, serverSettings);
  };

  // A real record for (a): fetched from the API itself so the sizes match.
  const sample = start("api");
  let body: string;
  try {
    await waitForServer(`${base}/healthz`, sample);
    const response = await fetch(`${base}${citizenPath(1)()}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    body = await response.text();
    if (response.status !== 200)
      throw new ApiBenchFailed(`sample record: ${response.status} ${body}`);
  } finally {
    await sample.stop();
  }
  const bodyFile = join(RESULTS_DIR, "cache", "constant-body.json");
  await mkdir(join(RESULTS_DIR, "cache"), { recursive: true });
  await writeFile(bodyFile, body);

  const targets: Target[] = [
    {
      key: "a_constant_json",
      label: "(a) Bun.serve constant JSON",
      server: "constant",
      path: citizenPath(1),
    },
    {
      key: "b_primary_key",
      label: "(b) Bun.serve + postgres.js PK query",
      server: "primary-key",
      path: citizenPath(1),
    },
    { key: "c_api_s1", label: "(c) API /s1/:id", server: "api", path: citizenPath(1) },
    { key: "c_api_s2", label: "(c) API /s2/:id", server: "api", path: citizenPath(2) },
    {
      key: "c_api_list",
      label: "(c) API listing (25 a page)",
      server: "api",
      path: () => `/v1/staking/citizens?address=${pick(wallets)}`,
    },
  ];
  const results: Record<string, Record<string, number>> = {};
  for (const target of targets) {
    const child = start(target.server, bodyFile);
    try {
      await waitForServer(`${base}/healthz`, child);
      if (warmup > 0) await load(base, token, target.path, connections, warmup);
      const rss = trackPeakRss(child);
      const before = {
        server: await cpuSecondsOf(child.pid),
        postgres: await cpuSecondsOfCommand("postgres"),
        redis: await cpuSecondsOfCommand("redis-server"),
        loader: process.cpuUsage(),
      };
      const result = await load(base, token, target.path, connections, duration);
      const loaderCpu = process.cpuUsage(before.loader);
      const seconds = result.duration;
      const cores = (cpu: number) => round(cpu / seconds, 2);
      results[target.key] = {
        requestsPerSecond: round(result.requests.total / seconds, 0),
        requests: result.requests.total,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        errors: result.errors,
        timeouts: result.timeouts,
        non2xx: result.non2xx,
        serverPeakRssBytes: await rss.stop(),
        serverCores: cores((await cpuSecondsOf(child.pid)) - before.server),
        postgresCores: cores((await cpuSecondsOfCommand("postgres")) - before.postgres),
        redisCores: cores((await cpuSecondsOfCommand("redis-server")) - before.redis),
        loadGeneratorCores: cores((loaderCpu.user + loaderCpu.system) / 1e6),
        seconds,
      };
      log(`${target.label}: ${results[target.key]!.requestsPerSecond} req/s`);
    } finally {
      await child.stop();
    }
  }

  const rate = (key: string) => results[key]?.requestsPerSecond ?? Number.NaN;
  const ratios = {
    c_s1_over_a: round(rate("c_api_s1") / rate("a_constant_json"), 4),
    c_s1_over_b: round(rate("c_api_s1") / rate("b_primary_key"), 4),
    c_s2_over_a: round(rate("c_api_s2") / rate("a_constant_json"), 4),
    c_s2_over_b: round(rate("c_api_s2") / rate("b_primary_key"), 4),
    c_list_over_a: round(rate("c_api_list") / rate("a_constant_json"), 4),
    c_list_over_b: round(rate("c_api_list") / rate("b_primary_key"), 4),
  };
  console.log(
    `\n${connections} connections, ${duration} s each, ${rows.length} staked citizens over ${wallets.length} wallets; CPU in cores (this machine has ${machine().cpus})\n`,
  );
  const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;
  console.log(
    table([
      [
        "target",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "non-2xx",
        "server RSS",
        "server",
        "postgres",
        "redis",
        "loader",
      ],
      ...targets.map((target) => {
        const r = results[target.key]!;
        return [
          target.label,
          r.requestsPerSecond!,
          r.p50Ms!,
          r.p99Ms!,
          r.errors!,
          r.non2xx!,
          mb(r.serverPeakRssBytes!),
          r.serverCores!,
          r.postgresCores!,
          r.redisCores!,
          r.loadGeneratorCores!,
        ];
      }),
    ]),
  );
  console.log(
    `\nc/a: s1 ${ratios.c_s1_over_a}, s2 ${ratios.c_s2_over_a}, listing ${ratios.c_list_over_a}; c/b: s1 ${ratios.c_s1_over_b}, s2 ${ratios.c_s2_over_b}, listing ${ratios.c_list_over_b}`,
  );
  const path = await writeReport({
    name: "api",
    smoke,
    startedAt,
    extraPackages: ["autocannon"],
    parameters: {
      ...spec,
      connections,
      durationSeconds: duration,
      warmupSeconds: warmup,
      poolSize: config.api.poolSize,
      stakedCitizens: rows.length,
      stakedS1: s1.length,
      stakedS2: s2.length,
      stakerWallets: wallets.length,
      recordBytes: body.length,
      apiLogLevel: "warn",
    },
    raw: results,
    ratios,
    notes: [
      "each server runs in its own process; autocannon runs in this process on the same machine",
      "CPU columns are cores used during the measured run (postgres and redis: every such process on the machine)",
    ],
  });
  console.log(`\nwrote ${path}`);
}

if (import.meta.main) runMain(main);
