/**
 * Backfill throughput against its own limit (raw eth_getLogs + COPY of the same logs), on each
 * scenario size: 1, 2 and 4 `worker` processes through a counting proxy, one straight to the node
 * (what the proxy's own work costs) and one through a 40 ms latency proxy, each with what the
 * workers asked the node, their CPU per event and peak RSS; then the chunk write time against a
 * stored synthetic history. Each run and figure: docs/performance.md, "Backfill". Targets (issue
 * 12) are printed beside the figures, never asserted.
 *
 * `bun bench/backfill.ts [--events 20000,100000] [--workers 1,2,4] [--latency-ms 40]
 *   [--latency-workers 1] [--chunk-size 4] [--concurrency 4] [--phases] [--cpu-prof]
 *   [--history-at 10000,100000,1000000] [--history-vacuum] [--no-history] [--smoke]`
 */
import { readFile } from "node:fs/promises";
import { encodeFunctionData } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { staticCallBatchAbi } from "../contracts/generated/StaticCallBatch.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi, vaultAbi } from "../indexer/chain/token-abis.ts";
import { fetchRange } from "../indexer/fetch/fetch-range.ts";
import { type RpcProxy, startRpcProxy } from "../test/support/rpc-proxy.ts";
import { functionNames } from "../test/support/view-calls.ts";
import { printTables, ratiosOf, summarize, TARGETS } from "./support/backfill-tables.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import {
  defaultWallets,
  type LoadedScenario,
  loadScenario,
  openRun,
  rpc,
  writeScratchHistory,
} from "./support/harness.ts";
import { chunks, type LimitRun, measureLimit } from "./support/limit.ts";
import {
  type Child,
  coresBetween,
  cpuByRole,
  peakRssOf,
  threadCpuOf,
  threadCpuSince,
} from "./support/processes.ts";
import { log, percentile, round, startReport } from "./support/report.ts";

/** The functions the indexer reads, to name the contract calls the proxy counts. */
// `run` is the tokenURI reader (indexer/chain/static-call-batch.ts): up to 50 tokenURIs a call.
const READ_NAMES = functionNames([
  stakerAbi,
  s1CitizenAbi,
  s2CitizenAbi,
  vaultAbi,
  identityAbi,
  staticCallBatchAbi,
]);

/** Worst-case chunks (every chunk's 10,000 events touch all 10,000 citizens) against history. */
const HISTORY = { chunkEvents: 10_000, citizens: 10_000 };

type Chain = LoadedScenario;

/**
 * The limit through each path, `rounds` times in turn (so a drift in the machine's load touches
 * every path alike), keeping each path's fastest round: the first fetch of a range pays for cold
 * caches in the node and in Postgres, and a limit that is too low flatters every ratio.
 */
async function measureLimits(
  { scenario, node }: Chain,
  paths: { direct: string; counting: string; latency?: string; fair: string; fairCounting: string },
  chunkSize: number,
  rounds: number,
) {
  type Best = LimitRun & { roundsEventsPerSecond: number[] };
  const best: Partial<Record<keyof typeof paths, Best>> = {};
  const { staker } = scenario.deployment.addresses;
  const range = { from: scenario.deployment.deployBlock, to: scenario.head };
  for (let n = 0; n < rounds; n++) {
    for (const [path, url] of Object.entries(paths) as [keyof typeof paths, string][]) {
      if (url === undefined) continue;
      const contracts = path.startsWith("fair") ? scenario.deployment.addresses : undefined;
      const on = { url, anvilPid: node.pid, staker, contracts };
      const run = await measureLimit(on, range, chunkSize);
      const kept = best[path];
      const rates = [...(kept?.roundsEventsPerSecond ?? []), run.eventsPerSecond];
      best[path] = {
        ...(kept && kept.eventsPerSecond >= run.eventsPerSecond ? kept : run),
        roundsEventsPerSecond: rates,
      };
    }
  }
  return { ...best, direct: best.direct!, counting: best.counting!, fair: best.fair! };
}

/**
 * The node's own cost of one view call at the head and at old blocks, sequentially: the real
 * backfill reads at its chunks' last blocks (and some stakes at their own), all old blocks.
 */
async function probeHistoricalCalls({ scenario, node }: Chain, calls: number) {
  const to = scenario.deployment.addresses.staker;
  const functionName = "vaultCreditMultiplier";
  const data = encodeFunctionData({ abi: stakerAbi, functionName, args: ["?"] });
  const request = rpc(node.rpcUrl);
  const msPerCallAt = async (block: bigint) => {
    const started = performance.now();
    for (let n = 0; n < calls; n++) {
      await request({ method: "eth_call", params: [{ to, data }, `0x${block.toString(16)}`] });
    }
    return round((performance.now() - started) / calls, 3);
  };
  const middle = (scenario.deployment.deployBlock + scenario.head) / 2n;
  return {
    calls,
    msPerCallAtHead: await msPerCallAt(scenario.head),
    msPerCallAtHeadMinusOne: await msPerCallAt(scenario.head - 1n),
    msPerCallAtMiddleBlock: await msPerCallAt(middle),
    middleBlock: middle,
  };
}

/**
 * The same backfill done in this process one chunk at a time, with each chunk's two halves timed:
 * fetching (logs, reads, projection to rows) and writing (the locked transaction: inserts,
 * checkpoint, staked_citizens rebuild). Says which half the real run waits on.
 */
async function measurePhases({ scenario, node }: Chain, chunkSize: number) {
  const { addresses, deployBlock } = scenario.deployment;
  const settings = { label: "bench_phases", rpcUrl: node.rpcUrl, staker: addresses.staker };
  await using run = await openRun({ ...settings, chunkSize });
  await run.indexer.ensureCheckpoint(deployBlock);
  const times: { from: string; events: number; fetchMs: number; writeMs: number }[] = [];
  for (const range of chunks(deployBlock, scenario.head, chunkSize)) {
    const begun = performance.now();
    const chunk = await fetchRange(run.indexer.deps, range);
    const fetched = performance.now();
    await run.indexer.store.writeRange(chunk);
    const [fetchMs, writeMs] = [fetched - begun, performance.now() - fetched];
    times.push({ from: `${range.from}`, events: chunk.events.length, fetchMs, writeMs });
  }
  const sum = (of: (chunk: (typeof times)[number]) => number) =>
    times.reduce((total, chunk) => total + of(chunk), 0);
  const [events, seconds] = [sum((c) => c.events), sum((c) => c.fetchMs + c.writeMs) / 1000];
  const slowest = times.sort((a, b) => b.fetchMs + b.writeMs - (a.fetchMs + a.writeMs));
  return {
    events,
    seconds: round(seconds, 3),
    eventsPerSecond: round(events / seconds, 0),
    fetchSeconds: round(sum((c) => c.fetchMs) / 1000, 3),
    writeSeconds: round(sum((c) => c.writeMs) / 1000, 3),
    slowestChunks: slowest
      .slice(0, 5)
      .map((c) => ({ ...c, fetchMs: Math.round(c.fetchMs), writeMs: Math.round(c.writeMs) })),
  };
}

/** Each job's time from fetch to commit, from the "chunk indexed" lines the workers logged. */
async function chunkTimes(workers: Child[]) {
  const logged = await Promise.all(workers.map((worker) => readFile(worker.logFile, "utf8")));
  const times = logged
    .flatMap((text) => text.split("\n").filter((line) => line.includes('"chunk indexed"')))
    .map((line) => (JSON.parse(line) as { ms: number }).ms)
    .sort((a, b) => a - b);
  const sum = times.reduce((total, ms) => total + ms, 0);
  return { p50: percentile(times, 50), p95: percentile(times, 95), max: times.at(-1) ?? null, sum };
}

/**
 * One real backfill: `workers` worker processes taking the chunk jobs of the whole chain, their
 * calls through `proxy`, or straight to the node (nothing counted) without one.
 */
async function measureReal(
  { scenario, node }: Chain,
  proxy: RpcProxy | undefined,
  { workers: count, concurrency, chunkSize, cpuProfile }: RealSettings,
) {
  const path: Path = !proxy ? "direct" : proxy.delayMs > 0 ? "latency" : "counting";
  const { addresses, chainId, deployBlock } = scenario.deployment;
  const label = `bench_backfill_w${count}_${path}`;
  const where = { rpcUrl: node.rpcUrl, staker: addresses.staker, chainId };
  await using run = await openRun({ ...where, label, chunkSize });
  const names = Array.from({ length: count }, (_, n) => `backfill-w${count}-${path}-${n}`);
  const settings = { RPC_URL: proxy?.url ?? node.rpcUrl, CONCURRENCY: String(concurrency) };
  const workers = await run.startIndexers("worker", names, settings, cpuProfile);
  // The workers' start-up checks (chain id, staker code) are not part of the backfill.
  proxy?.reset();
  const cpuBefore = await cpuByRole({ anvil: node.pid, children: workers });
  const threadsBefore = await Promise.all(workers.map((worker) => threadCpuOf(worker.pid)));
  const { to, chunks, seconds } = await run.indexRange({ from: deployBlock, to: scenario.head });
  const tally = proxy?.tally();
  const cpuAfter = await cpuByRole({ anvil: node.pid, children: workers });
  const pids = workers.map((worker) => worker.pid);
  const workerCpuByThread = await threadCpuSince(pids, threadsBefore);
  const cores = coresBetween(cpuBefore, cpuAfter, seconds);
  const workerPeakRssBytes = await Promise.all(workers.map((worker) => worker.peakRssBytes()));
  const events = await run.indexer.store.countEvents(deployBlock, to);
  const [counts] = await run.indexer.database.client<{ staked: string; stakes: string }[]>`
    select (select count(*) from staked_citizens)::text as staked,
           (select count(*) from citizen_stakes)::text as stakes`;
  const citizenStakes = Number(counts?.stakes ?? 0);
  await run.stopChildren();
  // The same tables rebuilt from what is stored, with no node (issue 15's reproject).
  const reprojectStarted = performance.now();
  await run.indexer.store.reproject();
  const reprojectSeconds = (performance.now() - reprojectStarted) / 1000;
  const workerCpuSeconds = cpuAfter.children - cpuBefore.children;
  const per = (count: number, of: number) => (of > 0 ? round(count / of, 4) : null);
  return {
    workers: count,
    concurrencyPerWorker: concurrency,
    path,
    proxyDelayMs: proxy?.delayMs ?? 0,
    chunks,
    events,
    citizenStakes,
    stakedCitizens: Number(counts?.staked ?? 0),
    seconds: round(seconds, 3),
    eventsPerSecond: round(events / seconds, 0),
    /** Null when the run went to the node without a proxy (nothing counted). */
    rpc: tally
      ? {
          ...tally,
          ethCallsPerCitizenStake: per(tally.ethCalls, citizenStakes),
          ethCallsPerEvent: per(tally.ethCalls, events),
          viewCallsPerCitizenStake: per(tally.viewCalls, citizenStakes),
          callsPerEvent: per(tally.calls, events),
        }
      : null,
    workerCpuSeconds: round(workerCpuSeconds, 2),
    workerCpuMicrosPerEvent: events > 0 ? round((workerCpuSeconds / events) * 1e6, 1) : null,
    /** The same CPU seconds by thread: the JIT's share is each process's own. */
    workerCpuByThread,
    /** VmHWM of each worker process when caught up: the most it ever held resident. */
    workerPeakRssBytes,
    reproject: {
      seconds: round(reprojectSeconds, 3),
      eventsPerSecond: round(events / reprojectSeconds, 0),
    },
    cores: {
      workers: cores.children,
      anvil: cores.anvil,
      postgres: cores.postgres,
      redis: cores.redis,
      benchAndProxy: cores.bench,
    },
    chunkMs: await chunkTimes(workers),
  };
}

type Path = "direct" | "counting" | "latency";
type RealSettings = {
  workers: number;
  concurrency: number;
  chunkSize: number;
  cpuProfile: boolean;
};
export type RealRun = Awaited<ReturnType<typeof measureReal>>;
export type CountedRun = RealRun & { rpc: NonNullable<RealRun["rpc"]> };
export type SizeRun = Awaited<ReturnType<typeof measureSize>>;

function counted(run: RealRun): CountedRun {
  if (!run.rpc) throw new Error(`the ${run.path} run went to the node without a proxy`);
  return run as CountedRun;
}

type Settings = ReturnType<typeof readSettings>;

/** Every measurement on one scenario size, against one loaded node. */
async function measureSize(events: number, settings: Settings) {
  const spec = { seed: settings.seed, events, wallets: defaultWallets(events) };
  const chain = await loadScenario(spec);
  const { scenario, node } = chain;
  const proxy = (delayMs: number) =>
    startRpcProxy(node.rpcUrl, { delayMs, functionNames: READ_NAMES });
  const counting = proxy(0);
  const slow = settings["latency-ms"] > 0 ? proxy(settings["latency-ms"]) : undefined;
  const { concurrency, "chunk-size": chunkSize } = settings;
  const realRun = async (through: RpcProxy | undefined, workers: number) => {
    const what = through ? `through the ${through.delayMs} ms proxy` : "straight to the node";
    log(`real backfill ${what}: ${workers} worker process(es) x concurrency ${concurrency}`);
    const cpuProfile = settings["cpu-prof"] && through === counting;
    const run = await measureReal(chain, through, { workers, concurrency, chunkSize, cpuProfile });
    const calls = `${run.rpc?.ethCalls ?? "uncounted"} eth_calls`;
    log(
      `  ${run.events} events in ${run.seconds} s (${run.eventsPerSecond}/s), ${calls} for ${run.citizenStakes} citizen stakes`,
    );
    return run;
  };
  try {
    // One eth_getLogs of a whole dense chain passes the 10 MiB answer cap: the limit asks 4 blocks.
    const limitChunk = Math.min(chunkSize, 4);
    log(`limit: raw eth_getLogs + COPY, chunks of ${limitChunk} blocks, best of 3 rounds`);
    const paths = { direct: node.rpcUrl, counting: counting.url, latency: slow?.url };
    const fairPaths = { fair: node.rpcUrl, fairCounting: counting.url };
    const limit = await measureLimits(chain, { ...paths, ...fairPaths }, limitChunk, 3);
    log(
      `limit: ${limit.direct.events} events, ${limit.direct.eventsPerSecond}/s direct, ${limit.counting.eventsPerSecond}/s counted, ${limit.latency?.eventsPerSecond ?? "-"}/s slow`,
    );
    log(`fair limit: ${limit.fair.eventsPerSecond}/s direct, ${limit.fair.ethCalls} eth_calls`);
    const nodeProbe = await probeHistoricalCalls(chain, settings.smoke ? 10 : 100);
    const { msPerCallAtHead: head, msPerCallAtHeadMinusOne: back, middleBlock } = nodeProbe;
    log(
      `eth_call: ${head} ms at the head, ${back} ms one block back, ${nodeProbe.msPerCallAtMiddleBlock} ms at block ${middleBlock}`,
    );
    const phases = settings.phases ? await measurePhases(chain, chunkSize) : undefined;
    const real: CountedRun[] = [];
    for (const workers of settings.workers) real.push(counted(await realRun(counting, workers)));
    // The proxy shares the machine's cores with what it measures: the same backfill straight to
    // the node shows what that costs.
    const control = await realRun(undefined, 1);
    const latency = slow && counted(await realRun(slow, settings["latency-workers"]));
    const { deployBlock } = scenario.deployment;
    return {
      spec,
      /** The node's peak RSS over the whole size: the loaded chain and every run against it. */
      nodePeakRssBytes: await peakRssOf(node.pid),
      blocks: Number(scenario.head - deployBlock + 1n),
      fromBlock: deployBlock,
      head: scenario.head,
      cacheGenerated: chain.generated,
      cacheLoadSeconds: chain.loadSeconds,
      scenario: {
        stakerEvents: scenario.stakerEvents,
        transactions: scenario.transactions,
        citizensStakedAtEnd: scenario.citizensStaked,
        generatedSeconds: scenario.generatedSeconds,
        stateBytes: scenario.stateBytes,
      },
      nodeProbe,
      phases,
      limit,
      real,
      control,
      latency,
    };
  } finally {
    await counting.stop();
    await slow?.stop();
    await node.stop();
  }
}

/** The chunk write time at each of `at` stored events of the synthetic history. */
function measureHistory(at: number[], settings: Settings) {
  const { chunkEvents, citizens } = HISTORY;
  log(
    `chunk write against stored history: chunks of ${chunkEvents} events over ${citizens} citizens`,
  );
  const options = { ...HISTORY, events: Math.max(...at), at, vacuum: settings["history-vacuum"] };
  return writeScratchHistory("bench_history", options);
}

function readSettings() {
  return readFlags({
    events: flag.numbers("20000,100000", "2000"),
    seed: flag.string("bench"),
    workers: flag.numbers("1,2,4", "1,2"),
    "latency-ms": flag.number("40", undefined, 0),
    "latency-workers": flag.number("1"),
    concurrency: flag.number("4"),
    "chunk-size": flag.number("4"),
    "cpu-prof": flag.boolean(),
    phases: flag.boolean(),
    "history-at": flag.numbers("10000,100000,1000000", "10000"),
    "no-history": flag.boolean(),
    "history-vacuum": flag.boolean(),
  });
}

async function main() {
  const settings = readSettings();
  const report = startReport("backfill", settings.smoke);
  const historyAt = settings["no-history"] ? [] : settings["history-at"];
  const sizes: SizeRun[] = [];
  for (const events of settings.events) sizes.push(await measureSize(events, settings));
  const history = historyAt.length > 0 ? await measureHistory(historyAt, settings) : [];
  report.finish();
  printTables(sizes, history, HISTORY);
  await report.write({
    parameters: {
      seed: settings.seed,
      eventSizes: settings.events,
      chunkSizeBlocks: settings["chunk-size"],
      concurrencyPerWorker: settings.concurrency,
      workerCounts: settings.workers,
      latencyMs: settings["latency-ms"],
      latencyWorkers: settings["latency-workers"],
      historyAt,
      historyVacuum: settings["history-vacuum"],
    },
    raw: { targets: TARGETS, sizes, summary: summarize(sizes), history },
    ratios: ratiosOf(sizes),
  });
}

if (import.meta.main) runMain(main);
