/**
 * Read API throughput against the best bare primary-key server ("base"), each server and wrk in
 * its own process; each figure the median of its rounds. What each target asks, and the figures:
 * docs/performance.md, "Read API".
 *
 * `bun bench/api.ts [--duration 5] [--rounds 3] [--connections 64] [--threads 1] [--soak 120]
 *   [--soak-interval 10] [--events 100000] [--smoke]`
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { RECORD_WRITER } from "../api/modules/citizens/record.ts";
import { createDatabase } from "../db/client.ts";
import { ensureDatabase, runMigrations } from "../db/migrate.ts";
import { createToken } from "../db/tokens.ts";
import { createIndexerStore } from "../indexer/store/index.ts";
import { config } from "../lib/config.ts";
import { withDatabase } from "../lib/database-url.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import {
  defaultWallets,
  loadScenario,
  openRun,
  openScratch,
  profileArgs,
  type ScenarioSpec,
} from "./support/harness.ts";
import { coresBetween, cpuByRole } from "./support/processes.ts";
import {
  columns,
  log,
  machine,
  median,
  print,
  RESULTS_DIR,
  round,
  startReport,
  type Target,
  targetTable,
} from "./support/report.ts";
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

/** The scenario indexed into a database kept between runs; `bench_cache` marks it finished. */
async function indexedDatabase(spec: ScenarioSpec): Promise<string> {
  const name = `cs_bench_api_${spec.seed}_${spec.events}_${spec.wallets}`.toLowerCase();
  const databaseUrl = withDatabase(config.databaseUrl, name);
  await ensureDatabase(databaseUrl);
  // A database indexed by an older version is brought up to date, as an upgrade would be.
  await runMigrations(databaseUrl);
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const [cached] = await sql<{ done: boolean; stale: boolean }[]>`
    select to_regclass('bench_cache') is not null as done, exists (select from staked_citizens
      where record_writer is distinct from ${RECORD_WRITER}) as stale`.finally(() => sql.end());
  if (cached?.done && cached.stale) {
    // Rows indexed before this version's record writer would be rendered per request: store them.
    const handle = createDatabase(databaseUrl, { max: 1 });
    await createIndexerStore(handle.db).reproject().finally(handle.close);
  }
  if (cached?.done) return databaseUrl;
  const { scenario, node } = await loadScenario(spec);
  try {
    const { addresses, chainId, deployBlock } = scenario.deployment;
    const where = { rpcUrl: node.rpcUrl, staker: addresses.staker, chainId, databaseUrl };
    await using run = await openRun({ ...where, label: "bench_api", chunkSize: 4 });
    // One worker process does the chunks, so its job logs go to its log file, not this table.
    const args = ["scripts/cli.ts", "worker"];
    const worker = run.spawn("api-bench-indexer", args, { RPC_URL: node.rpcUrl });
    log(`indexing the scenario once into ${name} (worker log: ${worker.logFile})`);
    await run.indexRange({ from: deployBlock, to: scenario.head }, { pollMs: 100 });
    const sql = run.indexer.database.client;
    await sql`create table bench_cache (head bigint not null)`;
    await sql`insert into bench_cache values (${scenario.head.toString()})`;
  } finally {
    await node.stop();
  }
  return databaseUrl;
}

type Server =
  | { kind: "primary-key"; client: "postgres.js" | "bun-sql"; pool: number }
  | { kind: "api"; pool: number; cache: boolean };

type LoadTarget = {
  key: string;
  label: string;
  server: Server;
  requests: string;
  /** Runs once the server answers, before the load: e.g. collect ETags for conditional GETs. */
  prepare?: (base: string) => Promise<void>;
};

function serverName(server: Server): string {
  return server.kind === "api"
    ? `api-pool${server.pool}-${server.cache ? "cached" : "uncached"}`
    : `primary-key-${server.client}-pool${server.pool}`;
}

function readSettings() {
  const flags = readFlags({
    duration: flag.number("5", "1"),
    connections: flag.number("64"),
    threads: flag.number("1"),
    warmup: flag.number("2", "0", 0),
    rounds: flag.number("3", "1"),
    soak: flag.number("120", "3"),
    "soak-interval": flag.number("10", "1"),
    events: flag.number("100000", "2000"),
    seed: flag.string("bench"),
    "cpu-prof": flag.boolean(),
  });
  const spec = { seed: flags.seed, events: flags.events, wallets: defaultWallets(flags.events) };
  return { ...flags, spec, soakRuns: Math.max(2, Math.round(flags.soak / flags["soak-interval"])) };
}

async function main() {
  const settings = readSettings();
  const url = await indexedDatabase(settings.spec);
  const report = startReport("api", settings);
  const indexed = await readIndexed(url, report.startedAt);
  const targets = await loadTargets(settings, indexed);
  const { results, soak } = await measure(settings, url, indexed, targets);
  report.finish();
  const compared = compare(targets, results, soak);
  printTables(settings, indexed, targets, results, compared, report.load);
  const { rows, s1, s2, wallets, asOfBlock } = indexed;
  await report.write({
    parameters: {
      apiPoolSize: config.api.poolSize,
      stakedCitizens: rows.length,
      stakedS1: s1.length,
      stakedS2: s2.length,
      stakerWallets: wallets.length,
      wrk: await wrkVersion(),
      base: compared.best.key,
      asOfBlock,
    },
    raw: { ...results, soak, byRound: compared.byRound },
    ratios: compared.ratios,
  });
}

type Settings = ReturnType<typeof readSettings>;

/** The staked citizens and wallets of the indexed database, its block, and a token to ask. */
async function readIndexed(url: string, startedAt: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const rows = await sql<{ season: number; id: string; staker: string }[]>`
    select season, citizen_id::text as id, staker from staked_citizens`;
  const [indexed] = await sql<{ block: string }[]>`
    select max(indexed_block)::text as block from indexer_checkpoints`;
  await sql.end({ timeout: 5 });
  const s1 = rows.filter((row) => row.season === 1);
  const s2 = rows.filter((row) => row.season === 2);
  const wallets = [...new Set(rows.map((row) => row.staker))];
  if (s1.length === 0 || s2.length === 0) throw new ApiBenchFailed("no staked citizens indexed");
  const staked = `${rows.length} staked citizens (${s1.length} S1, ${s2.length} S2)`;
  log(`${staked} over ${wallets.length} wallets`);
  const handle = createDatabase(url, { max: 1 });
  const { token } = await createToken(handle.db, `bench-api-${startedAt}`);
  await handle.close();
  return { rows, s1, s2, wallets, asOfBlock: indexed!.block, token };
}

type Indexed = Awaited<ReturnType<typeof readIndexed>>;
type Round = WrkResult & { serverCores: number; postgresCores: number };
type Measured = ReturnType<typeof middleOf> & { serverPeakRssBytes: number };

/** The servers and what each target asks of one, its requests written to files for wrk. */
async function loadTargets({ spec }: Settings, { s1, s2, wallets, asOfBlock, token }: Indexed) {
  const files = join(RESULTS_DIR, "cache");
  await mkdir(files, { recursive: true });
  // Named by scenario: a smoke run (the test suite's) must not overwrite a full run's requests.
  const requestFile = (kind: string) => join(files, `wrk-${spec.seed}-${spec.events}-${kind}.txt`);
  const citizenRequests = (citizens: { id: string; staker: string }[], season: 1 | 2, query = "") =>
    citizens.map((row) => ({
      path: `/v1/staking/citizens/s${season}/${row.id}?address=${row.staker}${query}`,
    }));
  const listRequests = (query = "") =>
    wallets.map((wallet) => ({ path: `/v1/staking/citizens?address=${wallet}${query}` }));
  const asOf = `&block=${asOfBlock}`;
  const requestFiles = {
    s1: await writeRequests(requestFile("s1"), citizenRequests(s1, 1)),
    s2: await writeRequests(requestFile("s2"), citizenRequests(s2, 2)),
    list: await writeRequests(requestFile("list"), listRequests()),
    s1AsOf: await writeRequests(requestFile("s1-as-of"), citizenRequests(s1, 1, asOf)),
    listAsOf: await writeRequests(requestFile("list-as-of"), listRequests(asOf)),
    s1Conditional: requestFile("s1-conditional"),
  };

  /** For 304s: one GET per citizen (a sample) to learn its current ETag. */
  const collectEtags = async (serverBase: string) => {
    const requests: WrkRequest[] = [];
    // The staked citizens come in no particular order: the first 2,000 are a sample.
    for (const request of citizenRequests(s1, 1).slice(0, 2_000)) {
      const response = await fetch(`${serverBase}${request.path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      await response.arrayBuffer();
      const etag = response.headers.get("etag");
      if (response.status !== 200 || !etag)
        throw new ApiBenchFailed(`no ETag for ${request.path}: ${response.status}`);
      requests.push({ ...request, ifNoneMatch: etag });
    }
    await writeRequests(requestFiles.s1Conditional, requests);
  };

  const apiPool = config.api.poolSize;
  const otherPool = apiPool === 1 ? 4 : 1;
  const uncached: Server = { kind: "api", pool: apiPool, cache: false };
  const cached: Server = { kind: "api", pool: apiPool, cache: true };
  const other: Server = { kind: "api", pool: otherPool, cache: false };
  const on = (key: string, label: string, server: Server, requests: keyof typeof requestFiles) =>
    ({ key, label, server, requests: requestFiles[requests] }) as LoadTarget;
  const bare = (client: "postgres.js" | "bun-sql", pool: number) =>
    on(
      `base_${client.replace(/[.-]/g, "")}_pool${pool}`,
      `base: Bun.serve + ${client === "bun-sql" ? "Bun SQL" : client}, pool ${pool}`,
      { kind: "primary-key", client, pool },
      "s1",
    );
  return [
    bare("postgres.js", 1),
    bare("postgres.js", 4),
    // The API's own client and pool (DB_POOL_SIZE 1): the fair bare twin of its hot reads.
    bare("bun-sql", 1),
    bare("bun-sql", 4),
    on("uncached_s1", `API s1, no cache, pool ${apiPool}`, uncached, "s1"),
    on(`uncached_s1_pool${otherPool}`, `API s1, no cache, pool ${otherPool}`, other, "s1"),
    on("uncached_s2", "API s2, no cache", uncached, "s2"),
    on("uncached_list", "API listing (25 a page), no cache", uncached, "list"),
    on("as_of_s1", "API s1 ?block=N, no cache", uncached, "s1AsOf"),
    on("as_of_list", "API listing ?block=N, no cache", uncached, "listAsOf"),
    on("cached_s1", "API s1, cache", cached, "s1"),
    on("cached_s2", "API s2, cache", cached, "s2"),
    on("cached_list", "API listing, cache", cached, "list"),
    {
      ...on("not_modified_s1", "API s1, If-None-Match → 304", cached, "s1Conditional"),
      prepare: collectEtags,
    },
  ];
}

/** The figures of a target's rounds: medians, and the errors summed. */
function middleOf(rounds: Round[]) {
  const middle = (of: (r: Round) => number) => median(rounds.map(of));
  const sum = (of: (r: Round) => number) => rounds.reduce((total, r) => total + of(r), 0);
  return {
    requestsPerSecond: middle((r) => r.requestsPerSecond),
    p50Ms: middle((r) => r.p50Ms),
    p99Ms: middle((r) => r.p99Ms),
    errors: sum((r) => r.errors),
    statusErrors: sum((r) => r.statusErrors),
    serverCores: middle((r) => r.serverCores),
    postgresCores: middle((r) => r.postgresCores),
    loaderCores: middle((r) => r.loaderCores),
    rounds,
  };
}

/** Every target's rounds of wrk, in turn; then the soak against the uncached API. */
async function measure(settings: Settings, url: string, indexed: Indexed, targets: LoadTarget[]) {
  const { connections, threads, warmup, rounds: roundCount } = settings;
  const { rows, wallets, token } = indexed;
  await using run = await openScratch("bench_api", url);
  const start = (server: Server) => {
    const name = `api-bench-${serverName(server)}`;
    if (server.kind === "primary-key") {
      return run.serve(name, ["bench/servers/primary-key.ts", server.client, String(server.pool)]);
    }
    const cacheEntries = server.cache ? rows.length + wallets.length + 1_000 : 0;
    return run.serve(name, [...profileArgs(settings["cpu-prof"], name), "api/main.ts"], {
      DB_POOL_SIZE: String(server.pool),
      RESPONSE_CACHE_ENTRIES: String(cacheEntries),
    });
  };
  // Every server runs side by side and the targets take turns round by round: other load on the
  // machine then falls on all of them alike, not on whichever ran during a busy minute.
  const running = new Map<string, Awaited<ReturnType<typeof start>>>();
  for (const { server } of targets) {
    if (!running.has(serverName(server))) running.set(serverName(server), await start(server));
  }
  const serverOf = (target: LoadTarget) => running.get(serverName(target.server))!;
  const load = { token, connections, threads };
  const wrk = (target: LoadTarget, seconds: number) =>
    runWrk(serverOf(target).base, target.requests, seconds, load);
  for (const target of targets) {
    await target.prepare?.(serverOf(target).base);
    if (warmup > 0) await wrk(target, warmup);
  }
  const rounds = new Map(targets.map((target) => [target, [] as Round[]]));
  for (let n = 1; n <= roundCount; n++) {
    for (const target of targets) {
      const children = [serverOf(target).child];
      const before = await cpuByRole({ children });
      const result = await wrk(target, settings.duration);
      const cores = coresBetween(before, await cpuByRole({ children }), result.seconds);
      const figures = { ...result, serverCores: cores.children, postgresCores: cores.postgres };
      rounds.get(target)!.push(figures);
      const rate = `${result.requestsPerSecond} req/s, p99 ${result.p99Ms} ms`;
      log(`round ${n}/${roundCount} ${target.label}: ${rate}`);
    }
  }
  // The soak: consecutive runs against one API process that has already served every round,
  // so anything that grows per request shows as a falling rate.
  const soakTarget = targets.find((target) => target.key === "uncached_s1")!;
  const soak: WrkResult[] = [];
  for (let n = 1; n <= settings.soakRuns; n++) {
    soak.push(await wrk(soakTarget, settings["soak-interval"]));
    log(`soak ${n}/${settings.soakRuns}: ${soak.at(-1)!.requestsPerSecond} req/s`);
  }
  const results: Record<string, Measured> = {};
  for (const [target, all] of rounds) {
    // The kernel's high-water mark: the most the server held resident over every round.
    const serverPeakRssBytes = await serverOf(target).child.peakRssBytes();
    results[target.key] = { ...middleOf(all), serverPeakRssBytes };
  }
  return { results, soak };
}

/** The API's rates against the fastest bare server ("base"), overall and round by round. */
function compare(targets: LoadTarget[], results: Record<string, Measured>, soak: WrkResult[]) {
  const baselines = targets.filter((target) => target.server.kind === "primary-key");
  const best = baselines.reduce((a, b) =>
    results[b.key]!.requestsPerSecond > results[a.key]!.requestsPerSecond ? b : a,
  );
  const base = results[best.key]!;
  const [fast, cache, half, soaked] = [0.8, 1.5, 0.5, 0.9].map((atLeast) => ({ atLeast }));
  const tail = { atMost: 2 };
  /** A figure: its name in the report's ratios and in the table, its value and its target. */
  type Figure = [key: string, name: string, value: number, target?: Target];
  const over = (key: string, name: string, target?: Target, of = "base"): Figure => {
    const rate = (at: string) => results[at === "base" ? best.key : at]!.requestsPerSecond;
    return [`${key}_over_${of}`, name, round(rate(key) / rate(of), 3), target];
  };
  // The fastest baseline can have a long tail (pools of 4 queue unevenly), so the API's p99 is
  // also held against the shortest tail any baseline showed.
  const shortest = Math.min(...baselines.map((target) => results[target.key]!.p99Ms));
  const p99 = (key: string, name: string, target?: Target, of = base.p99Ms, against = "base") =>
    [`${key}_p99_over_${against}`, name, round(results[key]!.p99Ms / of, 2), target] as Figure;
  const soakRates = soak.map((run) => run.requestsPerSecond);
  const soakOver = (rate: number) => round(rate / soakRates[0]!, 3);
  const figures: Figure[] = [
    over("uncached_s1", "uncached s1 / base", fast),
    over("uncached_s2", "uncached s2 / base", fast),
    over("cached_s1", "cached s1 / base", cache),
    over("cached_s2", "cached s2 / base", cache),
    over("cached_list", "cached listing / base"),
    p99("uncached_s1", "uncached s1 p99 / base p99", tail),
    p99("uncached_s2", "uncached s2 p99 / base p99", tail),
    p99("cached_s1", "cached s1 p99 / base p99"),
    p99("uncached_s1", "uncached s1 p99 / shortest base p99", tail, shortest, "shortest_base_p99"),
    p99("uncached_s2", "uncached s2 p99 / shortest base p99", tail, shortest, "shortest_base_p99"),
    ["soak_last_over_first", "soak: last / first", soakOver(soakRates.at(-1)!), soaked],
    ["soak_min_over_first", "soak: lowest / first", soakOver(Math.min(...soakRates))],
    over("uncached_list", "listing (no cache) / base", half),
    over("as_of_s1", "as-of s1 / current s1 (no cache)", half, "uncached_s1"),
    over("as_of_list", "as-of listing / current listing (no cache)", half, "uncached_list"),
    over("not_modified_s1", "304 s1 / base"),
  ];
  const ratios = Object.fromEntries(figures.map(([key, , value]) => [key, value]));

  // The same ratios round by round, each against the base of its own round: a busy minute on a
  // shared machine then shows as one odd round instead of moving a median.
  const baseRate = (n: number) => base.rounds[n]!.requestsPerSecond;
  const perRound = (key: string) =>
    results[key]!.rounds.map((run, n) => round(run.requestsPerSecond / baseRate(n), 2));
  const keys = ["uncached_s1", "uncached_s2", "uncached_list", "cached_s1", "cached_s2"];
  const byRound = Object.fromEntries(keys.map((key) => [key, perRound(key)]));
  return { best, base, figures, ratios, soakRates, byRound };
}

function printTables(
  { connections, threads, duration }: Settings,
  { rows, wallets }: Indexed,
  targets: LoadTarget[],
  results: Record<string, Measured>,
  { best, base, figures, soakRates, byRound }: ReturnType<typeof compare>,
  load: { before: number[]; after: number[] },
) {
  const of = (target: LoadTarget) => results[target.key]!;
  print(
    `load average (1, 5, 15 min) before ${load.before.join(", ")}, after ${load.after.join(", ")}`,
    `wrk: ${connections} connections, ${threads} thread(s), ${duration} s each; ${rows.length} staked citizens over ${wallets.length} wallets; CPU in cores (this machine has ${machine().cpus})`,
    columns(targets, {
      target: (target) => target.label,
      "req/s": (target) => of(target).requestsPerSecond,
      "p50 ms": (target) => round(of(target).p50Ms, 2),
      "p99 ms": (target) => round(of(target).p99Ms, 2),
      errors: (target) => of(target).errors,
      ">=400": (target) => of(target).statusErrors,
      RSS: (target) => `${Math.round(of(target).serverPeakRssBytes / 1e6)} MB`,
      server: (target) => of(target).serverCores,
      postgres: (target) => of(target).postgresCores,
      wrk: (target) => of(target).loaderCores,
    }),
    `base = ${best.label} (${base.requestsPerSecond} req/s, p99 ${base.p99Ms} ms)`,
  );
  print(targetTable(figures.map(([, name, value, target]) => [name, value, target])));
  console.log(`soak runs (req/s): ${soakRates.join(", ")}`);
  const rounds = Object.entries(byRound).map(([key, values]) => `${key} ${values.join(", ")}`);
  console.log(`per round, over that round's base: ${rounds.join("; ")}`);
}

if (import.meta.main) runMain(main);
