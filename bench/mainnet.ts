/**
 * The backfill on a mainnet-shaped chain through a provider-shaped node: the scenario's events
 * spread over millions of blocks (bench/support/sparse-chain.ts presents the cached dense devnet
 * so), reached through 50 ms of latency with jitter, a 10,000-block eth_getLogs cap worded as
 * Infura words it, and a request budget answered with 429 beyond (provider-node.ts). The same
 * run on the dense chain, through the same provider, stands beside it. Each backfill is compared
 * with the raw limit through the same node: eth_getLogs of the same blocks in the provider's
 * largest span, and COPY (bench/backfill.ts's limit).
 *
 * `bun bench/mainnet.ts` (20,000 events over 2,000,000 blocks) or `--smoke` (2,000 over 200,000).
 */
import { loadavg } from "node:os";
import { SeededRandom } from "../devnet/random.ts";
import { createIndexer } from "../indexer/indexer.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import { createScratchRedisPrefix } from "../scratch/redis.ts";
import { measureLimit } from "./backfill.ts";
import type { BenchAnvil } from "./support/anvil-process.ts";
import { readFlags, runMain, wholeNumber } from "./support/flags.ts";
import { type Child, spawnBun } from "./support/processes.ts";
import { type ProviderNodeStats, startProviderNode } from "./support/provider-node.ts";
import { log, round, table, writeReport } from "./support/report.ts";
import { type CachedScenario, defaultWallets, loadScenario } from "./support/scenario-cache.ts";
import { spreadBlocks, startSparseChain } from "./support/sparse-chain.ts";

export class MainnetRunStalled extends Error {
  override name = "MainnetRunStalled";
}

const TARGET_OF_LIMIT = 0.3;
/** Infura's live cap on eth_getLogs (github.com/INFURA/infura/issues/237). */
const PROVIDER_SPAN = 10_000;

type Provider = { latencyMs: number; jitterMs: number; requestsPerSecond: number };

function providerFor(chainUrl: string, provider: Provider) {
  return startProviderNode(chainUrl, {
    latencyMs: provider.latencyMs,
    jitterMs: provider.jitterMs,
    logs: { maxSpan: PROVIDER_SPAN, wording: "Infura (span)" },
    budget: { requestsPerSecond: provider.requestsPerSecond },
    seed: "mainnet-bench",
  });
}

/** Calls since `before`, by method, and the 429s among them. */
function callsSince(before: ProviderNodeStats, after: ProviderNodeStats) {
  const byMethod: Record<string, number> = {};
  for (const [method, count] of Object.entries(after.callsByMethod)) {
    const since = count - (before.callsByMethod[method] ?? 0);
    if (since > 0) byMethod[method] = since;
  }
  return {
    calls: after.calls - before.calls,
    httpRequests: after.httpRequests - before.httpRequests,
    callsOverBudget: after.callsOverBudget - before.callsOverBudget,
    refusedLogRanges: after.refusedLogRanges - before.refusedLogRanges,
    logsAnswered: after.logsAnswered - before.logsAnswered,
    stateReadsBy: {
      hash: after.stateReadsBy.hash - before.stateReadsBy.hash,
      number: after.stateReadsBy.number - before.stateReadsBy.number,
      tag: after.stateReadsBy.tag - before.stateReadsBy.tag,
    },
    byMethod,
  };
}

async function backfill(
  scenario: CachedScenario,
  chainUrl: string,
  range: { from: bigint; to: bigint },
  settings: { label: string; chunkSize: number; provider: Provider },
) {
  const provider = providerFor(chainUrl, settings.provider);
  const database = await createScratchDatabase(`bench_mainnet_${settings.label}`);
  const redis = createScratchRedisPrefix(`bench_mainnet_${settings.label}`);
  const staker = scenario.deployment.addresses.staker;
  // Queues the chunks and watches the checkpoint, straight to the chain: the provider counts
  // the worker's calls alone.
  const indexer = await createIndexer({
    rpcUrl: chainUrl,
    databaseUrl: database.url,
    redis: { url: redis.url },
    queuePrefix: redis.prefix,
    staker,
    chainId: scenario.deployment.chainId,
    chunkSize: settings.chunkSize,
    concurrency: 1,
    confirmations: 0,
    followIntervalMs: 200,
    maxLogRange: PROVIDER_SPAN,
    finalityDepth: 0,
  });
  let worker: Child | undefined;
  try {
    worker = spawnBun(`mainnet-${settings.label}`, ["scripts/cli.ts", "worker"], {
      RPC_URL: provider.url,
      RPC_MAX_REQUESTS_PER_SECOND: String(settings.provider.requestsPerSecond),
      STAKER_ADDRESS: staker,
      START_BLOCK: String(range.from),
      CHAIN_ID: String(scenario.deployment.chainId),
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      CHUNK_SIZE: String(settings.chunkSize),
      MAX_LOG_RANGE: String(PROVIDER_SPAN),
      CONCURRENCY: "4",
      LOG_LEVEL: "info",
    });
    const ready = Date.now() + 60_000;
    while ((await indexer.queues.chunks.getWorkersCount()) < 1) {
      worker.assertAlive();
      if (Date.now() > ready) throw new MainnetRunStalled("the worker did not connect in 60 s");
      await Bun.sleep(25);
    }
    const before = provider.stats();
    const cpuBefore = await worker.cpuSeconds();
    const started = performance.now();
    const { to, chunks } = await indexer.enqueueBackfill({ startBlock: range.from, to: range.to });
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      const checkpoint = await indexer.store.checkpoint();
      if (checkpoint && checkpoint.indexedBlock >= to) break;
      const [failed] = await indexer.queues.chunks.getFailed(0, 0);
      if (failed) throw new MainnetRunStalled(`chunk ${failed.id} failed: ${failed.failedReason}`);
      worker.assertAlive();
      if (Date.now() > deadline) throw new MainnetRunStalled("not caught up after 30 min");
      await Bun.sleep(20);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = (await worker.cpuSeconds()) - cpuBefore;
    const events = await indexer.store.countEvents(range.from, to);
    return {
      blocks: Number(to - range.from + 1n),
      chunks,
      events,
      seconds: round(seconds, 2),
      eventsPerSecond: round(events / seconds, 0),
      /** The worker's CPU: beside `seconds`, whether the run waited on the budget or the CPU. */
      workerCpuSeconds: round(cpuSeconds, 2),
      rpc: callsSince(before, provider.stats()),
    };
  } finally {
    await worker?.stop();
    await indexer.close();
    await redis.clean();
    await database.drop();
    provider.stop();
  }
}

async function limitThrough(
  scenario: CachedScenario,
  node: BenchAnvil,
  chainUrl: string,
  range: { from: bigint; to: bigint },
  chunkSize: number,
  provider: Provider,
) {
  const through = providerFor(chainUrl, provider);
  try {
    const before = through.stats();
    const limit = await measureLimit(scenario, node, through.url, chunkSize, range);
    return { ...limit, rpc: callsSince(before, through.stats()) };
  } finally {
    through.stop();
  }
}

async function main() {
  const flags = readFlags({
    events: { type: "string" },
    blocks: { type: "string" },
    seed: { type: "string", default: "bench" },
    "latency-ms": { type: "string", default: "50" },
    "jitter-ms": { type: "string", default: "20" },
    budget: { type: "string", default: "25" },
    "sparse-chunk": { type: "string", default: "100000" },
    smoke: { type: "boolean", default: false },
  });
  const smoke = flags.smoke === true;
  const events = wholeNumber("events", flags.events ?? (smoke ? "2000" : "20000"));
  const blocks = BigInt(wholeNumber("blocks", flags.blocks ?? (smoke ? "200000" : "2000000")));
  const provider: Provider = {
    latencyMs: wholeNumber("latency-ms", flags["latency-ms"], 0),
    jitterMs: wholeNumber("jitter-ms", flags["jitter-ms"], 0),
    requestsPerSecond: wholeNumber("budget", flags.budget),
  };
  // On a thin chain most chunks are empty, and each costs its header reads besides its
  // eth_getLogs: chunks of several provider spans spend less of the budget. Ten spans: 926
  // calls against 1,004 with five (fewer headers, fuller multicalls); twenty made 895 but run
  // their event-heavy chunks one at a time (each holds more than EVENTS_IN_FLIGHT).
  const sparseChunk = wholeNumber("sparse-chunk", flags["sparse-chunk"]);
  const startedAt = new Date().toISOString();
  const loadBefore = loadavg();

  const { scenario, node } = await loadScenario(
    { seed: String(flags.seed), events, wallets: defaultWallets(events) },
    log,
  );
  const deploy = scenario.deployment.deployBlock;
  const random = new SeededRandom(`mainnet-${flags.seed}`);
  const sparse = await startSparseChain(node.rpcUrl, {
    keepUpTo: deploy,
    placement: spreadBlocks(deploy, Number(scenario.head - deploy), blocks, () => random.next()),
    tailBlocks: 100,
  });
  try {
    const sparseRange = { from: deploy, to: sparse.sparseHead };
    const denseRange = { from: deploy, to: scenario.head };
    log(
      `sparse chain: ${scenario.head - deploy} real blocks of ${scenario.stakerEvents} events spread over ${sparse.sparseHead - deploy} blocks (head ${sparse.sparseHead})`,
    );
    // Each limit asks for the blocks in the largest span that passes: the dense chain in the
    // backfill bench's chunks (4 blocks, under the result cap), the sparse one in the provider's.
    log("limit: eth_getLogs + COPY through the provider, dense then sparse");
    const denseLimit = await limitThrough(scenario, node, node.rpcUrl, denseRange, 4, provider);
    sparse.resetOverhead();
    const sparseLimit = await limitThrough(
      scenario,
      node,
      sparse.url,
      sparseRange,
      PROVIDER_SPAN,
      provider,
    );
    const limitOverhead = sparse.overhead();
    log("backfill: dense chain through the provider");
    const dense = await backfill(scenario, node.rpcUrl, denseRange, {
      label: "dense",
      chunkSize: 4,
      provider,
    });
    log("backfill: sparse chain through the provider");
    sparse.resetOverhead();
    const mainnetShaped = await backfill(scenario, sparse.url, sparseRange, {
      label: "sparse",
      chunkSize: sparseChunk,
      provider,
    });
    const backfillOverhead = sparse.overhead();
    const loadAfter = loadavg();

    const ratio = (run: { eventsPerSecond: number }, limit: { eventsPerSecond: number }) =>
      round(run.eventsPerSecond / limit.eventsPerSecond, 3);
    const verdict = (value: number) => (value >= TARGET_OF_LIMIT ? "met" : "**not met**");
    const byMethod = (calls: Record<string, number>) =>
      Object.entries(calls)
        .sort(([, a], [, b]) => b - a)
        .map(([method, count]) => `${method} ${count}`)
        .join(", ");
    console.log(
      `\nmainnet-shaped backfill: ${scenario.stakerEvents} events, ${provider.latencyMs} ms (+0-${provider.jitterMs}) latency, ${PROVIDER_SPAN}-block eth_getLogs cap, budget ${provider.requestsPerSecond} calls/s; load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} before, ${loadAfter.map((l) => l.toFixed(2)).join(" ")} after\n`,
    );
    console.log(
      table([
        [
          "chain",
          "blocks",
          "chunk",
          "seconds to caught up",
          "events/s",
          "limit events/s",
          "/ limit (≥ 0.3)",
          "calls",
          "over budget",
          "calls by method",
        ],
        ...[
          ["dense", dense, denseLimit, 4] as const,
          ["sparse (mainnet-shaped)", mainnetShaped, sparseLimit, sparseChunk] as const,
        ].map(([name, run, limit, chunk]) => [
          name,
          run.blocks,
          chunk,
          run.seconds,
          run.eventsPerSecond,
          limit.eventsPerSecond,
          `${ratio(run, limit)} ${verdict(ratio(run, limit))}`,
          run.rpc.calls,
          run.rpc.callsOverBudget,
          byMethod(run.rpc.byMethod),
        ]),
      ]),
    );
    console.log(
      `\nlogs in eth_getLogs answers (their size, beside their count): dense ${dense.rpc.logsAnswered} (limit ${denseLimit.rpc.logsAnswered}), sparse ${mainnetShaped.rpc.logsAnswered} (limit ${sparseLimit.rpc.logsAnswered})`,
    );
    const readsBy = ({ rpc }: { rpc: { stateReadsBy: Record<string, number> } }) =>
      Object.entries(rpc.stateReadsBy)
        .map(([form, count]) => `${count} by ${form}`)
        .join(", ");
    console.log(
      `worker CPU: dense ${dense.workerCpuSeconds} s, sparse ${mainnetShaped.workerCpuSeconds} s; the sparse run's calls at the budget take ${round(mainnetShaped.rpc.calls / provider.requestsPerSecond, 1)} s`,
    );
    console.log(
      `state reads (eth_call, eth_getCode): dense ${readsBy(dense)}; sparse ${readsBy(mainnetShaped)}`,
    );
    console.log(
      `\nthe sparse node's own time: ${round(backfillOverhead.ownMicrosPerRequest, 0)} µs per HTTP request over ${backfillOverhead.requests} requests in the backfill (${round(backfillOverhead.ownMs / 1000, 2)} s of ${mainnetShaped.seconds} s), ${round(limitOverhead.ownMicrosPerRequest, 0)} µs in the limit`,
    );
    const path = await writeReport({
      name: "mainnet",
      smoke,
      startedAt,
      parameters: {
        seed: String(flags.seed),
        events,
        sparseBlocks: Number(sparse.sparseHead - deploy),
        realBlocks: Number(scenario.head - deploy),
        provider,
        providerSpan: PROVIDER_SPAN,
        chunkSizeDense: 4,
        chunkSizeSparse: sparseChunk,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadAfter,
      },
      raw: {
        target: TARGET_OF_LIMIT,
        dense: { backfill: dense, limit: denseLimit },
        sparse: { backfill: mainnetShaped, limit: sparseLimit },
        sparseNodeOverhead: { backfill: backfillOverhead, limit: limitOverhead },
      },
      ratios: {
        dense_over_limit: ratio(dense, denseLimit),
        sparse_over_limit: ratio(mainnetShaped, sparseLimit),
        sparse_calls_over_budget: mainnetShaped.rpc.callsOverBudget,
        dense_calls_over_budget: dense.rpc.callsOverBudget,
      },
      notes: [],
    });
    console.log(`\nwrote ${path}`);
  } finally {
    sparse.stop();
    await node.stop();
  }
}

if (import.meta.main) runMain(main);
