/**
 * Backfill throughput against its own limit, in one run per scenario size (20,000 and 100,000
 * events by default), each on one loaded scenario chain:
 *
 *   limit: the same staker logs fetched with raw eth_getLogs, chunk by chunk, and COPYed as raw
 *          rows into a scratch table (what moving the data alone costs), straight to the node,
 *          through the counting proxy, and through the latency proxy;
 *   real:  the project's backfill from empty tables to caught up — BullMQ chunk jobs, reads at
 *          each chunk's last block and, for stakes those cannot prove, at their own, projections — with 1, 2 and 4 `worker` processes, their RPC going
 *          through a counting proxy (no delay); once with 1 worker straight to the node (the
 *          control: what the proxy's own work on the same cores costs); and once through a
 *          proxy that adds 40 ms to every HTTP request (a distant provider).
 *
 * Every run reports what the workers asked the node (eth_calls per citizen stake, repeated
 * eth_calls, calls by method), their CPU per event and each worker's peak RSS. Targets (issue 12)
 * are printed beside the figures, never asserted.
 *
 * Then the chunk write time against the history already stored (issue 22): a synthetic history
 * (bench/support/synthetic-history.ts, the one bench/as-of.ts writes) written in worst-case
 * chunks of 10,000 events touching 10,000 citizens, timed at each --history-at point.
 *
 * `bun bench/backfill.ts [--events 20000,100000] [--workers 1,2,4] [--latency-ms 40]
 *   [--latency-workers 1] [--chunk-size 4] [--concurrency 4] [--phases] [--cpu-prof]
 *   [--history-at 10000,100000,1000000] [--history-vacuum] [--no-history] [--smoke]`
 *
 * --history-vacuum: as bench/as-of.ts's --vacuum (for a server with autovacuum off).
 */
import { readFile } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import postgres from "postgres";
import { type Address, encodeFunctionData } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { staticCallBatchAbi } from "../contracts/generated/StaticCallBatch.ts";
import { STAKER_TOPICS } from "../contracts/staker-events.ts";
import { createDatabase } from "../db/client.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi, vaultAbi } from "../indexer/chain/token-abis.ts";
import { fetchRange } from "../indexer/fetch/fetch-range.ts";
import { createIndexer } from "../indexer/indexer.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import { createScratchRedisPrefix } from "../scratch/redis.ts";
import { type RpcProxy, type RpcTally, startRpcProxy } from "../test/support/rpc-proxy.ts";
import { type ChunkWritePoint, writeHistory } from "../test/support/synthetic-history.ts";
import { functionNames } from "../test/support/view-calls.ts";
import type { BenchAnvil } from "./support/anvil-process.ts";
import type {
  BestLimitRun,
  CountedRun,
  LimitRun,
  NodeProbe,
  PhasesRun,
  RealRun,
  RpcFigures,
  RpcPath,
  SizeRun,
} from "./support/backfill-runs.ts";
import { ratiosOf, runTable, summarize, summaryTable, TARGETS } from "./support/backfill-tables.ts";
import { threadCpuOf, threadCpuSince } from "./support/backfill-threads.ts";
import { numberList, readFlags, runMain, wholeNumber } from "./support/flags.ts";
import { type Child, coresBetween, cpuByRole, peakRssOf, spawnBun } from "./support/processes.ts";
import { log, percentile, round, table, writeReport } from "./support/report.ts";
import { type CachedScenario, defaultWallets, loadScenario } from "./support/scenario-cache.ts";

export class BackfillStalled extends Error {
  override name = "BackfillStalled";
}

export class RunNotCounted extends Error {
  override name = "RunNotCounted";
}

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

type RawLog = {
  blockNumber: `0x${string}`;
  logIndex: `0x${string}`;
  blockHash: string;
  transactionHash: string;
  topics: string[];
  data: string;
};

async function rawLogs(rpcUrl: string, staker: Address, from: bigint, to: bigint) {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getLogs",
      params: [
        {
          address: staker,
          fromBlock: `0x${from.toString(16)}`,
          toBlock: `0x${to.toString(16)}`,
          topics: [STAKER_TOPICS],
        },
      ],
    }),
  });
  const body = (await response.json()) as { result?: RawLog[]; error?: { message: string } };
  if (!body.result) throw new Error(`eth_getLogs failed: ${body.error?.message}`);
  return body.result;
}

function chunks(from: bigint, to: bigint, size: number) {
  const ranges: { from: bigint; to: bigint }[] = [];
  for (let start = from; start <= to; start += BigInt(size)) {
    const end = start + BigInt(size) - 1n;
    ranges.push({ from: start, to: end < to ? end : to });
  }
  return ranges;
}

/** COPY text format: tab-separated, one row a line; hex needs no escaping. */
function copyRows(logs: RawLog[]): string {
  let text = "";
  for (const entry of logs) {
    text += `${BigInt(entry.blockNumber)}\t${Number(entry.logIndex)}\t${entry.blockHash}\t${entry.transactionHash}\t{${entry.topics.join(",")}}\t${entry.data}\n`;
  }
  return text;
}

/**
 * Fetches the range chunk by chunk (the next fetch overlapping the current COPY), from `rpcUrl`:
 * the node itself or a proxy in front of it. `range` is the scenario's by default (bench/mainnet
 * passes the same blocks as a sparse chain numbers them).
 */
export async function measureLimit(
  scenario: CachedScenario,
  node: BenchAnvil,
  rpcUrl: string,
  chunkSize: number,
  range = { from: scenario.deployment.deployBlock, to: scenario.head },
): Promise<LimitRun> {
  const database = await createScratchDatabase("bench_limit");
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table raw_logs (
      block_number bigint not null, log_index integer not null, block_hash text not null,
      transaction_hash text not null, topics text[] not null, data text not null,
      primary key (block_number, log_index))`;
    const ranges = chunks(range.from, range.to, chunkSize);
    const staker = scenario.deployment.addresses.staker;
    const cpuBefore = await cpuByRole({ anvil: node.pid });
    const started = performance.now();
    let fetchMs = 0;
    let copyMs = 0;
    let events = 0;
    const fetchRange = async (range: { from: bigint; to: bigint }) => {
      const begun = performance.now();
      const logs = await rawLogs(rpcUrl, staker, range.from, range.to);
      fetchMs += performance.now() - begun;
      return logs;
    };
    let next = fetchRange(ranges[0]!);
    for (let index = 0; index < ranges.length; index++) {
      const logs = await next;
      if (index + 1 < ranges.length) next = fetchRange(ranges[index + 1]!);
      if (logs.length === 0) continue;
      const begun = performance.now();
      const writable =
        await sql`copy raw_logs (block_number, log_index, block_hash, transaction_hash, topics, data) from stdin`.writable();
      await pipeline(Readable.from([copyRows(logs)]), writable);
      copyMs += performance.now() - begun;
      events += logs.length;
    }
    const seconds = (performance.now() - started) / 1000;
    const cores = coresBetween(cpuBefore, await cpuByRole({ anvil: node.pid }), seconds);
    const [stored] = await sql<{ count: string }[]>`select count(*)::text as count from raw_logs`;
    return {
      events,
      storedRows: Number(stored?.count ?? 0),
      chunks: ranges.length,
      seconds: round(seconds, 3),
      eventsPerSecond: round(events / seconds, 0),
      fetchSeconds: round(fetchMs / 1000, 3),
      copySeconds: round(copyMs / 1000, 3),
      cores: { anvil: cores.anvil, postgres: cores.postgres, bench: cores.bench },
    };
  } finally {
    await sql.end({ timeout: 5 });
    await database.drop();
  }
}

/**
 * The limit through each path, `rounds` times in turn (so a drift in the machine's load touches
 * every path alike), keeping each path's fastest round: the first fetch of a range pays for cold
 * caches in the node and in Postgres, and a limit that is too low flatters every ratio.
 */
async function measureLimits<Path extends string>(
  scenario: CachedScenario,
  node: BenchAnvil,
  paths: Record<Path, string | undefined>,
  chunkSize: number,
  rounds: number,
) {
  const best: Partial<Record<Path, BestLimitRun>> = {};
  for (let round = 0; round < rounds; round++) {
    for (const [path, url] of Object.entries(paths) as [Path, string | undefined][]) {
      if (url === undefined) continue;
      const run = await measureLimit(scenario, node, url, chunkSize);
      const seen = [...(best[path]?.roundsEventsPerSecond ?? []), run.eventsPerSecond];
      const kept =
        best[path] && best[path].eventsPerSecond >= run.eventsPerSecond ? best[path] : run;
      best[path] = { ...kept, roundsEventsPerSecond: seen };
    }
  }
  return best;
}

/**
 * The node's own cost of one view call at the head and at old blocks, sequentially: the real
 * backfill reads at its chunks' last blocks (and some stakes at their own), all old blocks.
 */
async function probeHistoricalCalls(
  scenario: CachedScenario,
  rpcUrl: string,
  calls: number,
): Promise<NodeProbe> {
  const data = encodeFunctionData({
    abi: stakerAbi,
    functionName: "vaultCreditMultiplier",
    args: ["?"],
  });
  const at = async (block: bigint) => {
    const started = performance.now();
    for (let n = 0; n < calls; n++) {
      const response = await fetch(rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: n,
          method: "eth_call",
          params: [{ to: scenario.deployment.addresses.staker, data }, `0x${block.toString(16)}`],
        }),
      });
      const body = (await response.json()) as { result?: string; error?: { message: string } };
      if (!body.result) throw new Error(`eth_call at ${block} failed: ${body.error?.message}`);
    }
    return round((performance.now() - started) / calls, 3);
  };
  const middle = (scenario.deployment.deployBlock + scenario.head) / 2n;
  return {
    calls,
    msPerCallAtHead: await at(scenario.head),
    msPerCallAtHeadMinusOne: await at(scenario.head - 1n),
    msPerCallAtMiddleBlock: await at(middle),
    middleBlock: middle,
  };
}

/**
 * The same backfill done in this process one chunk at a time, with each chunk's two halves timed:
 * fetching (logs, reads, projection to rows) and writing (the locked
 * transaction: inserts, checkpoint, staked_citizens rebuild). Says which half the real run
 * waits on.
 */
async function measurePhases(
  scenario: CachedScenario,
  node: BenchAnvil,
  chunkSize: number,
): Promise<PhasesRun> {
  const database = await createScratchDatabase("bench_phases");
  const redis = createScratchRedisPrefix("bench_phases");
  const indexer = await createIndexer({
    rpcUrl: node.rpcUrl,
    databaseUrl: database.url,
    redis: { url: redis.url },
    queuePrefix: redis.prefix,
    staker: scenario.deployment.addresses.staker,
    chunkSize,
    concurrency: 1,
    confirmations: 0,
    followIntervalMs: 200,
    maxLogRange: 10_000,
    // The cached chain never reorgs: chunk jobs may index right up to its head.
    finalityDepth: 0,
  });
  try {
    await indexer.ensureCheckpoint(scenario.deployment.deployBlock);
    let fetchMs = 0;
    let writeMs = 0;
    let events = 0;
    const slowest: { from: string; events: number; fetchMs: number; writeMs: number }[] = [];
    for (const range of chunks(scenario.deployment.deployBlock, scenario.head, chunkSize)) {
      const begun = performance.now();
      const chunk = await fetchRange(indexer.deps, range);
      const fetched = performance.now();
      await indexer.store.writeRange(chunk);
      const written = performance.now();
      fetchMs += fetched - begun;
      writeMs += written - fetched;
      events += chunk.events.length;
      slowest.push({
        from: range.from.toString(),
        events: chunk.events.length,
        fetchMs: Math.round(fetched - begun),
        writeMs: Math.round(written - fetched),
      });
    }
    slowest.sort((a, b) => b.fetchMs + b.writeMs - (a.fetchMs + a.writeMs));
    const seconds = (fetchMs + writeMs) / 1000;
    return {
      events,
      seconds: round(seconds, 3),
      eventsPerSecond: round(events / seconds, 0),
      fetchSeconds: round(fetchMs / 1000, 3),
      writeSeconds: round(writeMs / 1000, 3),
      slowestChunks: slowest.slice(0, 5),
    };
  } finally {
    await indexer.close();
    await redis.clean();
    await database.drop();
  }
}

type ChunkLine = { ms: number; events: number };

/** "chunk indexed" lines the workers logged: how long each job took from fetch to commit. */
async function chunkTimes(children: Child[]): Promise<ChunkLine[]> {
  const lines: ChunkLine[] = [];
  for (const child of children) {
    for (const line of (await readFile(child.logFile, "utf8")).split("\n")) {
      if (!line.includes('"chunk indexed"')) continue;
      const entry = JSON.parse(line) as { ms: number; events: number };
      lines.push({ ms: entry.ms, events: entry.events });
    }
  }
  return lines;
}

function pathOf(proxy: RpcProxy | undefined): RpcPath {
  if (!proxy) return "direct";
  return proxy.delayMs > 0 ? "latency" : "counting";
}

/** What the workers asked the node during one backfill, against what it indexed. */
function rpcFigures(tally: RpcTally, events: number, citizenStakes: number): RpcFigures {
  const per = (count: number, of: number) => (of > 0 ? round(count / of, 4) : null);
  return {
    ...tally,
    ethCallsPerCitizenStake: per(tally.ethCalls, citizenStakes),
    ethCallsPerEvent: per(tally.ethCalls, events),
    viewCallsPerCitizenStake: per(tally.viewCalls, citizenStakes),
    callsPerEvent: per(tally.calls, events),
  };
}

async function measureReal(
  scenario: CachedScenario,
  node: BenchAnvil,
  /** The workers' way to the node: a proxy, or none (straight to the node, nothing counted). */
  proxy: RpcProxy | undefined,
  settings: { workers: number; concurrency: number; chunkSize: number; cpuProfile: boolean },
): Promise<RealRun> {
  const path = pathOf(proxy);
  const label = `bench_backfill_w${settings.workers}_${path}`;
  const database = await createScratchDatabase(label);
  const redis = createScratchRedisPrefix(label);
  const staker = scenario.deployment.addresses.staker;
  // This process only queues the chunks and watches the checkpoint: it talks to the node
  // directly, so the proxy counts the workers' calls alone.
  const indexer = await createIndexer({
    rpcUrl: node.rpcUrl,
    databaseUrl: database.url,
    redis: { url: redis.url },
    queuePrefix: redis.prefix,
    staker,
    chainId: scenario.deployment.chainId,
    chunkSize: settings.chunkSize,
    concurrency: 1,
    confirmations: 0,
    followIntervalMs: 200,
    maxLogRange: 10_000,
    // The cached chain never reorgs: chunk jobs may index right up to its head.
    finalityDepth: 0,
  });
  const workers: Child[] = [];
  try {
    for (let n = 0; n < settings.workers; n++) {
      const name = `w${settings.workers}-${path}-${n}`;
      const profile = settings.cpuProfile
        ? [
            "--cpu-prof-md",
            `--cpu-prof-dir=bench/results/profiles`,
            `--cpu-prof-name=worker-${name}.md`,
          ]
        : [];
      workers.push(
        spawnBun(`backfill-${name}`, [...profile, "scripts/cli.ts", "worker"], {
          RPC_URL: proxy?.url ?? node.rpcUrl,
          STAKER_ADDRESS: staker,
          CHAIN_ID: String(scenario.deployment.chainId),
          DATABASE_URL: database.url,
          REDIS_URL: redis.url,
          QUEUE_PREFIX: redis.prefix,
          CONCURRENCY: String(settings.concurrency),
          CHUNK_SIZE: String(settings.chunkSize),
          LOG_LEVEL: "info",
        }),
      );
    }
    const ready = Date.now() + 60_000;
    while ((await indexer.queues.chunks.getWorkersCount()) < settings.workers) {
      for (const worker of workers) worker.assertAlive();
      if (Date.now() > ready) throw new BackfillStalled("workers did not connect within 60 s");
      await Bun.sleep(25);
    }
    // The workers' start-up checks (chain id, staker code) are not part of the backfill.
    proxy?.reset();
    const cpuBefore = await cpuByRole({ anvil: node.pid, children: workers });
    const threadsBefore = await Promise.all(workers.map((worker) => threadCpuOf(worker.pid)));
    const started = performance.now();
    const { to, chunks: queued } = await indexer.enqueueBackfill({
      startBlock: scenario.deployment.deployBlock,
      to: scenario.head,
    });
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      const checkpoint = await indexer.store.checkpoint();
      if (checkpoint && checkpoint.indexedBlock >= to) break;
      const [failed] = await indexer.queues.chunks.getFailed(0, 0);
      if (failed) throw new BackfillStalled(`chunk ${failed.id} failed: ${failed.failedReason}`);
      for (const worker of workers) worker.assertAlive();
      if (Date.now() > deadline) throw new BackfillStalled(`not caught up after 30 min`);
      await Bun.sleep(20);
    }
    const seconds = (performance.now() - started) / 1000;
    const tally = proxy?.tally();
    const cpuAfter = await cpuByRole({ anvil: node.pid, children: workers });
    const workerCpuByThread = await threadCpuSince(
      workers.map((worker) => worker.pid),
      threadsBefore,
    );
    const cores = coresBetween(cpuBefore, cpuAfter, seconds);
    const workerPeakRss = await Promise.all(workers.map((worker) => worker.peakRssBytes()));
    const events = await indexer.store.countEvents(scenario.deployment.deployBlock, to);
    const [counts] = await indexer.database.client<{ staked: string; stakes: string }[]>`
      select (select count(*) from staked_citizens)::text as staked,
             (select count(*) from citizen_stakes)::text as stakes`;
    const citizenStakes = Number(counts?.stakes ?? 0);
    const stopped = workers.splice(0);
    for (const worker of stopped) await worker.stop();
    // The same tables rebuilt from what is stored, with no node (issue 15's reproject).
    const reprojectStarted = performance.now();
    await indexer.store.reproject();
    const reprojectSeconds = (performance.now() - reprojectStarted) / 1000;
    const times = (await chunkTimes(stopped)).sort((a, b) => a.ms - b.ms);
    return {
      workers: settings.workers,
      concurrencyPerWorker: settings.concurrency,
      path,
      proxyDelayMs: proxy?.delayMs ?? 0,
      chunks: queued,
      events,
      citizenStakes,
      stakedCitizens: Number(counts?.staked ?? 0),
      seconds: round(seconds, 3),
      eventsPerSecond: round(events / seconds, 0),
      rpc: tally ? rpcFigures(tally, events, citizenStakes) : null,
      workerCpuSeconds: round(cpuAfter.children - cpuBefore.children, 2),
      workerCpuMicrosPerEvent:
        events > 0 ? round(((cpuAfter.children - cpuBefore.children) / events) * 1e6, 1) : null,
      workerCpuByThread,
      /** VmHWM of each worker process when caught up: the most it ever held resident. */
      workerPeakRssBytes: workerPeakRss,
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
      chunkMs: {
        p50: percentile(
          times.map((t) => t.ms),
          50,
        ),
        p95: percentile(
          times.map((t) => t.ms),
          95,
        ),
        max: times.at(-1)?.ms ?? null,
        sum: times.reduce((sum, t) => sum + t.ms, 0),
      },
    };
  } finally {
    for (const worker of workers) await worker.stop();
    await indexer.close();
    await redis.clean();
    await database.drop();
  }
}

function counted(run: RealRun): CountedRun {
  if (!run.rpc) throw new RunNotCounted(`the ${run.path} run went to the node without a proxy`);
  return run as CountedRun;
}

type SizeSettings = {
  seed: string;
  events: number;
  workerCounts: number[];
  latencyMs: number;
  latencyWorkers: number;
  concurrency: number;
  chunkSize: number;
  cpuProfile: boolean;
  phases: boolean;
  probeCalls: number;
  limitRounds: number;
};

/** Every measurement on one scenario size, against one loaded node. */
async function measureSize(settings: SizeSettings): Promise<SizeRun> {
  const spec = {
    seed: settings.seed,
    events: settings.events,
    wallets: defaultWallets(settings.events),
  };
  const loaded = await loadScenario(spec, log);
  const { scenario, node } = loaded;
  const counting = startRpcProxy(node.rpcUrl, { delayMs: 0, functionNames: READ_NAMES });
  const slow =
    settings.latencyMs > 0
      ? startRpcProxy(node.rpcUrl, { delayMs: settings.latencyMs, functionNames: READ_NAMES })
      : undefined;
  try {
    const chunkSize = settings.chunkSize;
    log(
      `limit: raw eth_getLogs + COPY, chunks of ${chunkSize} blocks, best of ${settings.limitRounds} rounds`,
    );
    const paths = { direct: node.rpcUrl, counting: counting.url, latency: slow?.url };
    const limits = await measureLimits(scenario, node, paths, chunkSize, settings.limitRounds);
    const limit = { direct: limits.direct!, counting: limits.counting!, latency: limits.latency };
    log(
      `limit: ${limit.direct.events} events, ${limit.direct.eventsPerSecond}/s direct, ${limit.counting.eventsPerSecond}/s through the counting proxy${limit.latency ? `, ${limit.latency.eventsPerSecond}/s through the ${settings.latencyMs} ms proxy` : ""}`,
    );
    const nodeProbe = await probeHistoricalCalls(scenario, node.rpcUrl, settings.probeCalls);
    log(
      `eth_call: ${nodeProbe.msPerCallAtHead} ms at the head, ${nodeProbe.msPerCallAtHeadMinusOne} ms one block back, ${nodeProbe.msPerCallAtMiddleBlock} ms at block ${nodeProbe.middleBlock}`,
    );
    let phases: PhasesRun | undefined;
    if (settings.phases) {
      log("phases: the backfill chunk by chunk in this process, fetch and write timed apart");
      phases = await measurePhases(scenario, node, chunkSize);
      log(
        `  fetch ${phases.fetchSeconds} s, write ${phases.writeSeconds} s (${phases.eventsPerSecond} events/s)`,
      );
    }
    const real: CountedRun[] = [];
    for (const workers of settings.workerCounts) {
      log(`real backfill: ${workers} worker process(es) x concurrency ${settings.concurrency}`);
      const result = counted(
        await measureReal(scenario, node, counting, {
          workers,
          concurrency: settings.concurrency,
          chunkSize,
          cpuProfile: settings.cpuProfile,
        }),
      );
      log(
        `  ${result.events} events in ${result.seconds} s (${result.eventsPerSecond}/s), ${result.rpc.ethCalls} eth_calls for ${result.citizenStakes} citizen stakes`,
      );
      real.push(result);
    }
    // The proxy shares the machine's cores with what it measures: the same backfill straight to
    // the node shows what that costs.
    log("real backfill straight to the node (control, nothing counted): 1 worker process");
    const control = await measureReal(scenario, node, undefined, {
      workers: 1,
      concurrency: settings.concurrency,
      chunkSize,
      cpuProfile: false,
    });
    log(`  ${control.events} events in ${control.seconds} s (${control.eventsPerSecond}/s)`);
    let latency: CountedRun | undefined;
    if (slow) {
      log(
        `real backfill through the ${slow.delayMs} ms proxy: ${settings.latencyWorkers} worker process(es)`,
      );
      latency = counted(
        await measureReal(scenario, node, slow, {
          workers: settings.latencyWorkers,
          concurrency: settings.concurrency,
          chunkSize,
          cpuProfile: false,
        }),
      );
      log(`  ${latency.events} events in ${latency.seconds} s (${latency.eventsPerSecond}/s)`);
    }
    return {
      spec,
      /** The node's peak RSS over the whole size: the loaded chain and every run against it. */
      nodePeakRssBytes: await peakRssOf(node.pid),
      blocks: Number(scenario.head - scenario.deployment.deployBlock + 1n),
      fromBlock: scenario.deployment.deployBlock,
      head: scenario.head,
      cacheGenerated: loaded.generated,
      cacheLoadSeconds: loaded.loadSeconds,
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

/** Worst-case chunks (every chunk's 10,000 events touch all 10,000 citizens) against history. */
const HISTORY_CHUNK_EVENTS = 10_000;
const HISTORY_CITIZENS = 10_000;

async function measureHistory(at: number[], vacuum: boolean): Promise<ChunkWritePoint[]> {
  const database = await createScratchDatabase("bench_history");
  const { db, close } = createDatabase(database.url, { max: 1 });
  try {
    return await writeHistory(db, {
      events: Math.max(...at),
      citizens: HISTORY_CITIZENS,
      chunkEvents: HISTORY_CHUNK_EVENTS,
      at,
      vacuum,
      onPoint: async (point) =>
        log(`  ${point.storedEvents} events stored: chunk write ${point.chunkWriteMs} ms`),
    });
  } finally {
    await close();
    await database.drop();
  }
}

async function main() {
  const flags = readFlags({
    events: { type: "string" },
    seed: { type: "string", default: "bench" },
    workers: { type: "string" },
    "latency-ms": { type: "string", default: "40" },
    "latency-workers": { type: "string", default: "1" },
    concurrency: { type: "string", default: "4" },
    "chunk-size": { type: "string", default: "4" },
    "cpu-prof": { type: "boolean", default: false },
    phases: { type: "boolean", default: false },
    "history-at": { type: "string" },
    "no-history": { type: "boolean", default: false },
    "history-vacuum": { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
  });
  const smoke = flags.smoke === true;
  const sizes = numberList("events", flags.events ?? (smoke ? "2000" : "20000,100000"));
  const workerCounts = numberList("workers", flags.workers ?? (smoke ? "1,2" : "1,2,4"));
  const latencyMs = wholeNumber("latency-ms", flags["latency-ms"], 0);
  const latencyWorkers = wholeNumber("latency-workers", flags["latency-workers"]);
  const concurrency = wholeNumber("concurrency", flags.concurrency);
  const chunkSize = wholeNumber("chunk-size", flags["chunk-size"]);
  const historyAt =
    flags["no-history"] === true
      ? []
      : numberList("history-at", flags["history-at"] ?? (smoke ? "10000" : "10000,100000,1000000"));
  const startedAt = new Date().toISOString();

  const runs: SizeRun[] = [];
  for (const events of sizes) {
    log(`scenario of ${events} events`);
    runs.push(
      await measureSize({
        seed: String(flags.seed),
        events,
        workerCounts,
        latencyMs,
        latencyWorkers,
        concurrency,
        chunkSize,
        cpuProfile: flags["cpu-prof"] === true,
        phases: flags.phases === true,
        probeCalls: smoke ? 10 : 100,
        limitRounds: 3,
      }),
    );
  }
  let history: ChunkWritePoint[] = [];
  if (historyAt.length > 0) {
    log(
      `chunk write time against stored history: chunks of ${HISTORY_CHUNK_EVENTS} events over ${HISTORY_CITIZENS} citizens`,
    );
    history = await measureHistory(historyAt, flags["history-vacuum"] === true);
  }
  for (const run of runs) console.log(`\n${runTable(run)}`);
  console.log(`\n${summaryTable(runs)}`);
  if (history.length > 0) {
    console.log(
      `\nchunk write (${HISTORY_CHUNK_EVENTS} events, ${HISTORY_CITIZENS} citizens touched; median of the last 3 chunks)\n${table(
        [
          ["stored events", "chunk write ms", "load 1m"],
          ...history.map((point) => [point.storedEvents, point.chunkWriteMs, point.load1m]),
        ],
      )}`,
    );
  }
  const path = await writeReport({
    name: "backfill",
    smoke,
    startedAt,
    parameters: {
      seed: String(flags.seed),
      eventSizes: sizes,
      chunkSizeBlocks: chunkSize,
      concurrencyPerWorker: concurrency,
      workerCounts,
      latencyMs,
      latencyWorkers,
      historyAt,
      historyVacuum: flags["history-vacuum"] === true,
    },
    raw: { targets: TARGETS, sizes: runs, summary: summarize(runs), history },
    ratios: ratiosOf(runs),
    notes: [],
  });
  console.log(`\nwrote ${path}`);
}

if (import.meta.main) runMain(main);
