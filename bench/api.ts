/**
 * Read API throughput against the best bare primary-key server, each server in its own process
 * and the load from wrk in its own process (fixed connections, random existing (address, id)
 * pairs or wallets, a valid token):
 *
 *   baselines: Bun.serve doing the API's one-citizen lookup as a single primary-key query, with
 *     postgres.js and Bun's SQL client (pool 1 and 4 each); the fastest is "base";
 *   the API (api/main.ts) for one S1 citizen, one S2 citizen and a wallet's listing, with the
 *     response cache off and on, and conditional GETs answered 304; and the as-of paths
 *     (`?block=N`, the indexed block, so every citizen asked for is staked then) of one S1
 *     citizen and of a listing, uncached, held against their current-state twins;
 *   a soak: the uncached S1 path for --soak seconds in consecutive runs against one server
 *     process, last run over first (decay shows only over time).
 *
 * All servers run side by side and the targets take turns for --rounds rounds of --duration
 * seconds; each figure is the median of its rounds. The database is the cached scenario indexed
 * once (kept as its own Postgres database).
 *
 * `bun bench/api.ts [--duration 5] [--rounds 3] [--connections 64] [--threads 1] [--soak 120]
 *   [--soak-interval 10] [--events 100000] [--smoke]`
 */
import { mkdir } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
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
import {
  runWrk,
  type WrkRequest,
  type WrkResult,
  writeRequests,
  wrkVersion,
} from "./support/wrk.ts";

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
    if (cached?.done) {
      // A database indexed by an older version is brought up to date, as an upgrade would be.
      await runMigrations(url);
      return url;
    }
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
      redis: { url: redis.url },
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

type Server =
  | { kind: "primary-key"; client: "postgres.js" | "bun-sql"; pool: number }
  | { kind: "api"; pool: number; cache: boolean };

type Target = {
  key: string;
  label: string;
  server: Server;
  requests: string;
  /** Runs once the server answers, before the load: e.g. collect ETags for conditional GETs. */
  prepare?: (base: string) => Promise<void>;
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

function serverName(server: Server): string {
  return server.kind === "api"
    ? `api-pool${server.pool}-${server.cache ? "cached" : "uncached"}`
    : `primary-key-${server.client}-pool${server.pool}`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : round((sorted[middle - 1]! + sorted[middle]!) / 2, 3);
}

const round2 = (value: number) => round(value, 2);

/** Up to `count` items spread evenly over `items` (all of them when fewer). */
function sample<T>(items: T[], count: number): T[] {
  if (items.length <= count) return items;
  const step = items.length / count;
  return Array.from({ length: count }, (_, index) => items[Math.floor(index * step)]!);
}

async function main() {
  const flags = readFlags({
    duration: { type: "string" },
    connections: { type: "string", default: "64" },
    threads: { type: "string", default: "1" },
    warmup: { type: "string" },
    rounds: { type: "string" },
    soak: { type: "string" },
    "soak-interval": { type: "string" },
    events: { type: "string" },
    seed: { type: "string", default: "bench" },
    "cpu-prof": { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
  });
  const smoke = flags.smoke === true;
  const duration = wholeNumber("duration", flags.duration ?? (smoke ? 1 : 5));
  const warmup = wholeNumber("warmup", flags.warmup ?? (smoke ? 0 : 2), 0);
  const connections = wholeNumber("connections", flags.connections);
  const threads = wholeNumber("threads", flags.threads);
  const soakInterval = wholeNumber("soak-interval", flags["soak-interval"] ?? (smoke ? 1 : 10));
  const soakSeconds = wholeNumber("soak", flags.soak ?? (smoke ? 3 : 120));
  const soakRuns = Math.max(2, Math.round(soakSeconds / soakInterval));
  const roundCount = wholeNumber("rounds", flags.rounds ?? (smoke ? 1 : 3));
  const events = wholeNumber("events", flags.events ?? (smoke ? 2_000 : 100_000));
  const spec = { seed: String(flags.seed), events, wallets: defaultWallets(events) };
  const startedAt = new Date().toISOString();

  const url = await indexedDatabase(spec);
  // The load average beside the figures: on a shared machine the ratios hold, the rates do not.
  const loadBefore = loadavg().map((value) => round(value, 2));
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const rows = await sql<{ season: number; id: string; staker: string }[]>`
    select season, citizen_id::text as id, staker from staked_citizens`;
  const [indexed] = await sql<{ block: string }[]>`
    select max(indexed_block)::text as block from indexer_checkpoints`;
  await sql.end({ timeout: 5 });
  const asOfBlock = indexed!.block;
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

  const files = join(RESULTS_DIR, "cache");
  await mkdir(files, { recursive: true });
  // Named by scenario: a smoke run (the test suite's) must not overwrite a full run's requests.
  const requestFile = (kind: string) => join(files, `wrk-${spec.seed}-${spec.events}-${kind}.txt`);
  const citizenRequests = (
    citizens: { id: string; staker: string }[],
    season: 1 | 2,
  ): WrkRequest[] =>
    citizens.map((row) => ({
      path: `/v1/staking/citizens/s${season}/${row.id}?address=${row.staker}`,
    }));
  const requestFiles = {
    s1: await writeRequests(requestFile("s1"), citizenRequests(s1, 1)),
    s2: await writeRequests(requestFile("s2"), citizenRequests(s2, 2)),
    list: await writeRequests(
      requestFile("list"),
      wallets.map((wallet) => ({ path: `/v1/staking/citizens?address=${wallet}` })),
    ),
    s1AsOf: await writeRequests(
      requestFile("s1-as-of"),
      citizenRequests(s1, 1).map(({ path }) => ({ path: `${path}&block=${asOfBlock}` })),
    ),
    listAsOf: await writeRequests(
      requestFile("list-as-of"),
      wallets.map((wallet) => ({
        path: `/v1/staking/citizens?address=${wallet}&block=${asOfBlock}`,
      })),
    ),
    s1Conditional: requestFile("s1-conditional"),
  };

  let profiles = 0;
  const start = (server: Server, port: number) => {
    const settings: Record<string, string> = {
      DATABASE_URL: url,
      REDIS_URL: config.redis.url,
      QUEUE_PREFIX: `cs-bench-api-${process.pid}`,
      HOST: "127.0.0.1",
      PORT: String(port),
      // One token far past any real limit; the limiter's bookkeeping still runs.
      RATE_LIMIT_PER_MINUTE: "1000000000",
      LOG_LEVEL: "warn",
    };
    if (server.kind === "primary-key") {
      return spawnBun(
        `api-bench-${serverName(server)}`,
        ["bench/servers/primary-key.ts", server.client, String(server.pool)],
        settings,
      );
    }
    const profile =
      flags["cpu-prof"] === true
        ? [
            "--cpu-prof-md",
            "--cpu-prof-dir=bench/results/profiles",
            `--cpu-prof-name=api-bench-${serverName(server)}-${profiles++}.md`,
          ]
        : [];
    return spawnBun(`api-bench-${serverName(server)}`, [...profile, "api/main.ts"], {
      ...settings,
      DB_POOL_SIZE: String(server.pool),
      RESPONSE_CACHE_ENTRIES: server.cache ? String(rows.length + wallets.length + 1_000) : "0",
    });
  };

  const wrk = (base: string, requestsFile: string, seconds: number) =>
    runWrk({ base, token, requestsFile, connections, threads, seconds });

  /** For 304s: one GET per citizen (a sample) to learn its current ETag. */
  const collectEtags = async (serverBase: string) => {
    const requests: WrkRequest[] = [];
    for (const request of sample(citizenRequests(s1, 1), 2_000)) {
      const response = await fetch(`${serverBase}${request.path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      await response.arrayBuffer();
      const etag = response.headers.get("etag");
      if (response.status !== 200 || !etag) {
        throw new ApiBenchFailed(`no ETag for ${request.path}: ${response.status}`);
      }
      requests.push({ ...request, ifNoneMatch: etag });
    }
    await writeRequests(requestFiles.s1Conditional, requests);
  };

  const apiPool = config.api.poolSize;
  const otherPool = apiPool === 1 ? 4 : 1;
  const uncached: Server = { kind: "api", pool: apiPool, cache: false };
  const cached: Server = { kind: "api", pool: apiPool, cache: true };
  const targets: Target[] = [
    {
      key: "base_postgresjs_pool1",
      label: "base: Bun.serve + postgres.js, pool 1",
      server: { kind: "primary-key", client: "postgres.js", pool: 1 },
      requests: requestFiles.s1,
    },
    {
      key: "base_postgresjs_pool4",
      label: "base: Bun.serve + postgres.js, pool 4",
      server: { kind: "primary-key", client: "postgres.js", pool: 4 },
      requests: requestFiles.s1,
    },
    {
      // The API's own client and pool (DB_POOL_SIZE 1): the fair bare twin of its hot reads.
      key: "base_bunsql_pool1",
      label: "base: Bun.serve + Bun SQL, pool 1",
      server: { kind: "primary-key", client: "bun-sql", pool: 1 },
      requests: requestFiles.s1,
    },
    {
      key: "base_bunsql_pool4",
      label: "base: Bun.serve + Bun SQL, pool 4",
      server: { kind: "primary-key", client: "bun-sql", pool: 4 },
      requests: requestFiles.s1,
    },
    {
      key: "uncached_s1",
      label: `API s1, no cache, pool ${apiPool}`,
      server: uncached,
      requests: requestFiles.s1,
    },
    {
      key: `uncached_s1_pool${otherPool}`,
      label: `API s1, no cache, pool ${otherPool}`,
      server: { kind: "api", pool: otherPool, cache: false },
      requests: requestFiles.s1,
    },
    { key: "uncached_s2", label: "API s2, no cache", server: uncached, requests: requestFiles.s2 },
    {
      key: "uncached_list",
      label: "API listing (25 a page), no cache",
      server: uncached,
      requests: requestFiles.list,
    },
    {
      key: "as_of_s1",
      label: "API s1 ?block=N, no cache",
      server: uncached,
      requests: requestFiles.s1AsOf,
    },
    {
      key: "as_of_list",
      label: "API listing ?block=N, no cache",
      server: uncached,
      requests: requestFiles.listAsOf,
    },
    { key: "cached_s1", label: "API s1, cache", server: cached, requests: requestFiles.s1 },
    { key: "cached_s2", label: "API s2, cache", server: cached, requests: requestFiles.s2 },
    {
      key: "cached_list",
      label: "API listing, cache",
      server: cached,
      requests: requestFiles.list,
    },
    {
      key: "not_modified_s1",
      label: "API s1, If-None-Match → 304",
      server: cached,
      requests: requestFiles.s1Conditional,
      prepare: collectEtags,
    },
  ];

  type Measured = {
    requestsPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    errors: number;
    statusErrors: number;
    serverCores: number;
    postgresCores: number;
    loaderCores: number;
    serverPeakRssBytes: number;
    rounds: WrkResult[];
  };
  /** Per target: the median of its rounds. */
  const results: Record<string, Measured> = {};
  const soak: WrkResult[] = [];

  // Every server runs side by side (each on its own port, idle while another is measured), and
  // the targets take turns round by round: load from other work on a shared machine then falls
  // on all of them alike instead of on whichever ran during a busy minute.
  type Running = { child: Child; base: string; rss: ReturnType<typeof trackPeakRss> };
  const running = new Map<string, Running>();
  try {
    for (const target of targets) {
      const name = serverName(target.server);
      if (running.has(name)) continue;
      const port = await freePort();
      const child = start(target.server, port);
      const base = `http://127.0.0.1:${port}`;
      running.set(name, { child, base, rss: trackPeakRss(child) });
      await waitForServer(`${base}/healthz`, child);
    }
    const serverOf = (target: Target) => running.get(serverName(target.server))!;
    for (const target of targets) {
      await target.prepare?.(serverOf(target).base);
      if (warmup > 0) await wrk(serverOf(target).base, target.requests, warmup);
    }

    type Round = WrkResult & { serverCores: number; postgresCores: number };
    const rounds: Record<string, Round[]> = Object.fromEntries(
      targets.map((target) => [target.key, []]),
    );
    for (let round = 0; round < roundCount; round++) {
      for (const target of targets) {
        const { child, base } = serverOf(target);
        const before = {
          server: await cpuSecondsOf(child.pid),
          postgres: await cpuSecondsOfCommand("postgres"),
        };
        const result = await wrk(base, target.requests, duration);
        const cores = (cpu: number) => round2(cpu / result.seconds);
        rounds[target.key]!.push({
          ...result,
          serverCores: cores((await cpuSecondsOf(child.pid)) - before.server),
          postgresCores: cores((await cpuSecondsOfCommand("postgres")) - before.postgres),
        });
        log(
          `round ${round + 1}/${roundCount} ${target.label}: ${result.requestsPerSecond} req/s, p99 ${result.p99Ms} ms`,
        );
      }
    }
    for (const target of targets) {
      const all = rounds[target.key]!;
      results[target.key] = {
        requestsPerSecond: median(all.map((r) => r.requestsPerSecond)),
        p50Ms: median(all.map((r) => r.p50Ms)),
        p99Ms: median(all.map((r) => r.p99Ms)),
        errors: all.reduce((sum, r) => sum + r.errors, 0),
        statusErrors: all.reduce((sum, r) => sum + r.statusErrors, 0),
        serverCores: median(all.map((r) => r.serverCores)),
        postgresCores: median(all.map((r) => r.postgresCores)),
        loaderCores: median(all.map((r) => r.loaderCores)),
        serverPeakRssBytes: 0,
        rounds: all,
      };
    }

    // The soak: consecutive runs against one API process that has already served every round,
    // so anything that grows per request shows as a falling rate.
    const soakServer = serverOf(targets.find((target) => target.key === "uncached_s1")!);
    for (let run = 0; run < soakRuns; run++) {
      const result = await wrk(soakServer.base, requestFiles.s1, soakInterval);
      soak.push(result);
      log(`soak ${run + 1}/${soakRuns}: ${result.requestsPerSecond} req/s`);
    }
  } finally {
    for (const [name, server] of running) {
      const peak = await server.rss.stop();
      for (const target of targets) {
        if (serverName(target.server) === name && results[target.key]) {
          results[target.key]!.serverPeakRssBytes = peak;
        }
      }
      await server.child.stop();
    }
  }

  const baselines = targets.filter((target) => target.server.kind === "primary-key");
  const best = baselines.reduce((a, b) =>
    results[b.key]!.requestsPerSecond > results[a.key]!.requestsPerSecond ? b : a,
  );
  const base0 = results[best.key]!;
  const over = (key: string) => round(results[key]!.requestsPerSecond / base0.requestsPerSecond, 3);
  const p99Over = (key: string) => round(results[key]!.p99Ms / base0.p99Ms, 2);
  // The fastest baseline can have a long tail (pools of 4 queue unevenly), so the API's p99 is
  // also held against the shortest tail any baseline showed.
  const shortestP99 = Math.min(...baselines.map((target) => results[target.key]!.p99Ms));
  const p99OverShortest = (key: string) => round(results[key]!.p99Ms / shortestP99, 2);
  const ratios = {
    uncached_s1_over_base: over("uncached_s1"),
    uncached_s2_over_base: over("uncached_s2"),
    uncached_list_over_base: over("uncached_list"),
    cached_s1_over_base: over("cached_s1"),
    cached_s2_over_base: over("cached_s2"),
    cached_list_over_base: over("cached_list"),
    not_modified_s1_over_base: over("not_modified_s1"),
    as_of_s1_over_uncached_s1: round(
      results.as_of_s1!.requestsPerSecond / results.uncached_s1!.requestsPerSecond,
      3,
    ),
    as_of_list_over_uncached_list: round(
      results.as_of_list!.requestsPerSecond / results.uncached_list!.requestsPerSecond,
      3,
    ),
    uncached_s1_p99_over_base: p99Over("uncached_s1"),
    uncached_s2_p99_over_base: p99Over("uncached_s2"),
    cached_s1_p99_over_base: p99Over("cached_s1"),
    uncached_s1_p99_over_shortest_base_p99: p99OverShortest("uncached_s1"),
    uncached_s2_p99_over_shortest_base_p99: p99OverShortest("uncached_s2"),
    soak_last_over_first: round(soak.at(-1)!.requestsPerSecond / soak[0]!.requestsPerSecond, 3),
    soak_min_over_first: round(
      Math.min(...soak.map((run) => run.requestsPerSecond)) / soak[0]!.requestsPerSecond,
      3,
    ),
  };

  const loadAfter = loadavg().map((value) => round(value, 2));
  console.log(
    `\nload average (1, 5, 15 min) before ${loadBefore.join(", ")}, after ${loadAfter.join(", ")}`,
  );
  console.log(
    `\nwrk: ${connections} connections, ${threads} thread(s), ${duration} s each; ${rows.length} staked citizens over ${wallets.length} wallets; CPU in cores (this machine has ${machine().cpus})\n`,
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
        ">=400",
        "RSS",
        "server",
        "postgres",
        "wrk",
      ],
      ...targets.map((target) => {
        const r = results[target.key]!;
        return [
          target.label,
          r.requestsPerSecond,
          round(r.p50Ms, 2),
          round(r.p99Ms, 2),
          r.errors,
          r.statusErrors,
          mb(r.serverPeakRssBytes),
          r.serverCores,
          r.postgresCores,
          r.loaderCores,
        ];
      }),
    ]),
  );
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  console.log(`\nbase = ${best.label} (${base0.requestsPerSecond} req/s, p99 ${base0.p99Ms} ms)`);
  console.log(
    table([
      ["figure", "value", "target", ""],
      [
        "uncached s1 / base",
        ratios.uncached_s1_over_base,
        ">= 0.8",
        verdict(ratios.uncached_s1_over_base >= 0.8),
      ],
      [
        "uncached s2 / base",
        ratios.uncached_s2_over_base,
        ">= 0.8",
        verdict(ratios.uncached_s2_over_base >= 0.8),
      ],
      [
        "cached s1 / base",
        ratios.cached_s1_over_base,
        ">= 1.5",
        verdict(ratios.cached_s1_over_base >= 1.5),
      ],
      [
        "cached s2 / base",
        ratios.cached_s2_over_base,
        ">= 1.5",
        verdict(ratios.cached_s2_over_base >= 1.5),
      ],
      [
        "uncached s1 p99 / base p99",
        ratios.uncached_s1_p99_over_base,
        "<= 2",
        verdict(ratios.uncached_s1_p99_over_base <= 2),
      ],
      [
        "uncached s2 p99 / base p99",
        ratios.uncached_s2_p99_over_base,
        "<= 2",
        verdict(ratios.uncached_s2_p99_over_base <= 2),
      ],
      [
        "uncached s1 p99 / shortest base p99",
        ratios.uncached_s1_p99_over_shortest_base_p99,
        "<= 2",
        verdict(ratios.uncached_s1_p99_over_shortest_base_p99 <= 2),
      ],
      [
        "soak: last / first",
        ratios.soak_last_over_first,
        ">= 0.9",
        verdict(ratios.soak_last_over_first >= 0.9),
      ],
      [
        "listing (no cache) / base",
        ratios.uncached_list_over_base,
        ">= 0.5",
        verdict(ratios.uncached_list_over_base >= 0.5),
      ],
      [
        "as-of s1 / current s1 (no cache)",
        ratios.as_of_s1_over_uncached_s1,
        ">= 0.5",
        verdict(ratios.as_of_s1_over_uncached_s1 >= 0.5),
      ],
      [
        "as-of listing / current listing (no cache)",
        ratios.as_of_list_over_uncached_list,
        ">= 0.5",
        verdict(ratios.as_of_list_over_uncached_list >= 0.5),
      ],
      ["304 s1 / base", ratios.not_modified_s1_over_base, "-", ""],
    ]),
  );
  console.log(`soak runs (req/s): ${soak.map((run) => run.requestsPerSecond).join(", ")}`);
  // The same ratios round by round, each against the base of its own round: a busy minute on a
  // shared machine then shows as one odd round instead of moving a median.
  const byRound = Object.fromEntries(
    ["uncached_s1", "uncached_s2", "uncached_list", "cached_s1", "cached_s2"].map((key) => [
      key,
      results[key]!.rounds.map((run, index) =>
        round(run.requestsPerSecond / results[best.key]!.rounds[index]!.requestsPerSecond, 2),
      ),
    ]),
  );
  console.log(
    `per round, over that round's base: ${Object.entries(byRound)
      .map(([key, values]) => `${key} ${values.join(", ")}`)
      .join("; ")}`,
  );
  const path = await writeReport({
    name: "api",
    smoke,
    startedAt,
    parameters: {
      ...spec,
      connections,
      threads,
      durationSeconds: duration,
      warmupSeconds: warmup,
      soakRuns,
      soakIntervalSeconds: soakInterval,
      apiPoolSize: apiPool,
      stakedCitizens: rows.length,
      stakedS1: s1.length,
      stakedS2: s2.length,
      stakerWallets: wallets.length,
      apiLogLevel: "warn",
      wrk: await wrkVersion(),
      base: best.key,
      asOfBlock,
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadAfter,
    },
    raw: { ...results, soak, byRound },
    ratios,
    notes: [
      "each server runs in its own process, and wrk in its own process, on the same machine",
      "CPU columns are cores used during the measured run (postgres: every postgres process on the machine)",
      "targets are printed, never asserted",
    ],
  });
  console.log(`\nwrote ${path}`);
}

if (import.meta.main) runMain(main);
