/**
 * Backfill throughput against its raw and fair limits (support/limit.ts) on each scenario size,
 * with what the workers asked the node, their CPU per event and peak RSS. Each run and figure:
 * docs/performance.md, "Backfill".
 *
 * `bun bench/backfill.ts [--events 20000,100000] [--workers 1,2,4] [--latency-ms 40]
 *   [--latency-workers 1] [--chunk-size 4] [--concurrency 4] [--cpu-prof] [--smoke]`
 */
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { staticCallBatchAbi } from "../contracts/generated/StaticCallBatch.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi, vaultAbi } from "../indexer/chain/token-abis.ts";
import { type RpcProxy, startRpcProxy } from "../test/support/rpc-proxy.ts";
import { functionNames } from "../test/support/view-calls.ts";
import { printTables, ratiosOf, TARGETS } from "./support/backfill-tables.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import { type LoadedScenario, loadScenario, openRun } from "./support/harness.ts";
import { type LimitRun, measureLimit } from "./support/limit.ts";
import { coresBetween, cpuByRole, peakRssOf } from "./support/processes.ts";
import { log, round, startReport } from "./support/report.ts";

// `run` is the tokenURI reader (indexer/chain/static-call-batch.ts): up to 50 tokenURIs a call.
const ABIS = [stakerAbi, s1CitizenAbi, s2CitizenAbi, vaultAbi, identityAbi, staticCallBatchAbi];
/** The functions the indexer reads, to name the contract calls the proxy counts. */
const READ_NAMES = functionNames(ABIS);

type Settings = ReturnType<typeof readSettings>;

/** Each path's fastest of `rounds` in turn: a limit low from cold caches flatters every ratio. */
async function measureLimits(
  { scenario, node }: LoadedScenario,
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
      const roundsEventsPerSecond = [...(kept?.roundsEventsPerSecond ?? []), run.eventsPerSecond];
      const faster = kept && kept.eventsPerSecond >= run.eventsPerSecond ? kept : run;
      best[path] = { ...faster, roundsEventsPerSecond };
    }
  }
  return { ...best, direct: best.direct!, counting: best.counting!, fair: best.fair! };
}

/** One real backfill by `workers` worker processes, through `proxy` or (uncounted) without. */
async function measureReal(
  { scenario, node }: LoadedScenario,
  proxy: RpcProxy | undefined,
  { workers: count, concurrency, chunkSize, cpuProfile }: RealSettings,
) {
  const path = !proxy ? "direct" : proxy.delayMs > 0 ? "latency" : "counting";
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
  const { to, chunks, seconds } = await run.indexRange({ from: deployBlock, to: scenario.head });
  const tally = proxy?.tally();
  const cpuAfter = await cpuByRole({ anvil: node.pid, children: workers });
  /** VmHWM of each worker process when caught up: the most it ever held resident. */
  const workerPeakRssBytes = await Promise.all(workers.map((worker) => worker.peakRssBytes()));
  const events = await run.indexer.store.countEvents(deployBlock, to);
  const [stakes] = await run.indexer.database.client`select count(*)::int from citizen_stakes`;
  const citizenStakes = Number(stakes?.count ?? 0);
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
    workerPeakRssBytes,
    reproject: {
      seconds: round(reprojectSeconds, 3),
      eventsPerSecond: round(events / reprojectSeconds, 0),
    },
    /** Cores busy while it ran, by role: `children` are the workers, `bench` this process. */
    cores: coresBetween(cpuBefore, cpuAfter, seconds),
  };
}

type RealSettings = Record<"workers" | "concurrency" | "chunkSize", number> & {
  cpuProfile: boolean;
};
export type RealRun = Awaited<ReturnType<typeof measureReal>>;
export type CountedRun = RealRun & { rpc: NonNullable<RealRun["rpc"]> };
export type SizeRun = Awaited<ReturnType<typeof measureSize>>;

function counted(run: RealRun): CountedRun {
  if (!run.rpc) throw new Error(`the ${run.path} run went to the node without a proxy`);
  return run as CountedRun;
}

async function measureSize(events: number, settings: Settings) {
  const chain = await loadScenario({ seed: settings.seed, events });
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
    const calls = `${run.rpc?.ethCalls ?? "uncounted"} eth_calls for ${run.citizenStakes} citizen stakes`;
    log(`  ${run.events} events in ${run.seconds} s (${run.eventsPerSecond}/s), ${calls}`);
    return run;
  };
  try {
    // One eth_getLogs of a whole dense chain passes the 10 MiB answer cap: the limit asks 4 blocks.
    const limitChunk = Math.min(chunkSize, 4);
    log(`limit: raw eth_getLogs + COPY, chunks of ${limitChunk} blocks, best of 3 rounds`);
    const paths = { direct: node.rpcUrl, counting: counting.url, latency: slow?.url };
    const fairPaths = { fair: node.rpcUrl, fairCounting: counting.url };
    const limit = await measureLimits(chain, { ...paths, ...fairPaths }, limitChunk, 3);
    const rates = `${limit.direct.eventsPerSecond} direct, ${limit.counting.eventsPerSecond} counted, ${limit.latency?.eventsPerSecond ?? "-"} slow, ${limit.fair.eventsPerSecond} fair`;
    log(`limits, events/s of ${limit.direct.events} events: ${rates}`);
    const real: CountedRun[] = [];
    for (const workers of settings.workers) real.push(counted(await realRun(counting, workers)));
    // The proxy shares the machine's cores with what it measures: the same backfill straight to
    // the node shows what that costs.
    const control = await realRun(undefined, 1);
    const latency = slow && counted(await realRun(slow, settings["latency-workers"]));
    return {
      scenario,
      cacheGenerated: chain.generated,
      cacheLoadSeconds: chain.loadSeconds,
      /** The node's peak RSS over the whole size: the loaded chain and every run against it. */
      nodePeakRssBytes: await peakRssOf(node.pid),
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
  });
}

async function main() {
  const settings = readSettings();
  const report = startReport("backfill", settings);
  const sizes: SizeRun[] = [];
  for (const events of settings.events) sizes.push(await measureSize(events, settings));
  report.finish();
  printTables(sizes);
  await report.write({
    raw: { targets: TARGETS, sizes },
    ratios: ratiosOf(sizes),
  });
}

if (import.meta.main) runMain(main);
