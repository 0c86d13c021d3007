/**
 * The backfill on a mainnet-shaped chain through a provider-shaped node: the scenario's events
 * spread over millions of blocks (bench/support/sparse-chain.ts presents the cached dense devnet
 * so), reached through 50 ms of latency with jitter, a 10,000-block eth_getLogs cap worded as
 * Infura words it, and a request budget answered with 429 beyond (provider-node.ts). The same
 * run on the dense chain, through the same provider, stands beside it. Each backfill is compared
 * with the raw limit through the same node: eth_getLogs of the same blocks in the provider's
 * largest span, and COPY (bench/backfill.ts's limit).
 *
 * The missing-log checks are measured beside: the sparse backfill again with a second node
 * (RPC_CHECK_URL, another provider of the same shape and budget) instead of the Transfer check,
 * and the follower over the chain's last 100 blocks, shaped like mainnet's (busy-blocks.ts),
 * first with blooms that admit nothing (no check fires) and then at each `--follow-fills`
 * share of bloom bits set: every bloom that admits the staker costs a re-ask by hash and the
 * block's receipts, through the same provider budget.
 *
 * `bun bench/mainnet.ts` (20,000 events over 2,000,000 blocks) or `--smoke` (2,000 over 200,000).
 */
import { loadavg } from "node:os";
import { SeededRandom } from "../devnet/random.ts";
import { mayHoldStakerLogs } from "../indexer/chain/log-bloom.ts";
import { createIndexer } from "../indexer/indexer.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import { createScratchRedisPrefix } from "../scratch/redis.ts";
import { bloomWithFill } from "../test/support/busy-blocks.ts";
import { type ProviderNodeStats, startProviderNode } from "../test/support/provider-node.ts";
import { spreadBlocks, startSparseChain } from "../test/support/sparse-chain.ts";
import { measureLimit } from "./backfill.ts";
import type { BenchAnvil } from "./support/anvil-process.ts";
import { readFlags, runMain, wholeNumber } from "./support/flags.ts";
import { type Child, spawnBun } from "./support/processes.ts";
import { log, round, table, writeReport } from "./support/report.ts";
import { type CachedScenario, defaultWallets, loadScenario } from "./support/scenario-cache.ts";

export class MainnetRunStalled extends Error {
  override name = "MainnetRunStalled";
}

const TARGET_OF_LIMIT = 0.3;
/** Infura's live cap on eth_getLogs (github.com/INFURA/infura/issues/237). */
const PROVIDER_SPAN = 10_000;
/** Blocks after the last real one: mainnet-shaped, and what the follower runs measure. */
const TAIL_BLOCKS = 100;
/** Above the tail: every tail block is the follower's, never a chunk job's. */
const FOLLOW_FINALITY_DEPTH = 200;

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
  settings: { label: string; chunkSize: number; provider: Provider; checkNode?: boolean },
) {
  const provider = providerFor(chainUrl, settings.provider);
  // Another provider of the same shape, with its own budget: what RPC_CHECK_URL costs is there.
  const check = settings.checkNode ? providerFor(chainUrl, settings.provider) : undefined;
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
      ...(check && { RPC_CHECK_URL: check.url }),
    });
    const ready = Date.now() + 60_000;
    while ((await indexer.queues.chunks.getWorkersCount()) < 1) {
      worker.assertAlive();
      if (Date.now() > ready) throw new MainnetRunStalled("the worker did not connect in 60 s");
      await Bun.sleep(25);
    }
    const before = provider.stats();
    const checkBefore = check?.stats();
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
      checkRpc: check && checkBefore ? callsSince(checkBefore, check.stats()) : undefined,
    };
  } finally {
    await worker?.stop();
    await indexer.close();
    await redis.clean();
    await database.drop();
    provider.stop();
    check?.stop();
  }
}

/**
 * The follower (`follow`, its own process) through the provider from block `from` to the head,
 * every block above its finality boundary: block by block, each header read and its bloom
 * checked. Timed from its follow worker's start to the checkpoint at the head.
 */
async function follow(
  scenario: CachedScenario,
  chainUrl: string,
  range: { from: bigint; to: bigint },
  settings: { label: string; provider: Provider },
) {
  const provider = providerFor(chainUrl, settings.provider);
  const database = await createScratchDatabase(`bench_mainnet_${settings.label}`);
  const redis = createScratchRedisPrefix(`bench_mainnet_${settings.label}`);
  const staker = scenario.deployment.addresses.staker;
  const indexer = await createIndexer({
    rpcUrl: chainUrl,
    databaseUrl: database.url,
    redis: { url: redis.url },
    queuePrefix: redis.prefix,
    staker,
    chainId: scenario.deployment.chainId,
    chunkSize: 2_000,
    concurrency: 1,
    confirmations: 0,
    followIntervalMs: 200,
    maxLogRange: PROVIDER_SPAN,
    finalityDepth: FOLLOW_FINALITY_DEPTH,
  });
  let follower: Child | undefined;
  try {
    await indexer.ensureCheckpoint(range.from);
    follower = spawnBun(`mainnet-${settings.label}`, ["scripts/cli.ts", "follow"], {
      RPC_URL: provider.url,
      RPC_MAX_REQUESTS_PER_SECOND: String(settings.provider.requestsPerSecond),
      STAKER_ADDRESS: staker,
      START_BLOCK: String(range.from),
      CHAIN_ID: String(scenario.deployment.chainId),
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      FINALITY_DEPTH: String(FOLLOW_FINALITY_DEPTH),
      MAX_LOG_RANGE: String(PROVIDER_SPAN),
      METADATA_REFRESH_INTERVAL_MS: "0",
      LOG_LEVEL: "info",
    });
    const ready = Date.now() + 60_000;
    while ((await indexer.queues.follow.getWorkersCount()) < 1) {
      follower.assertAlive();
      if (Date.now() > ready) throw new MainnetRunStalled("the follower did not connect in 60 s");
      await Bun.sleep(10);
    }
    const before = provider.stats();
    const cpuBefore = await follower.cpuSeconds();
    const started = performance.now();
    const deadline = Date.now() + 10 * 60_000;
    for (;;) {
      const checkpoint = await indexer.store.checkpoint();
      if (checkpoint && checkpoint.indexedBlock >= range.to) break;
      follower.assertAlive();
      if (Date.now() > deadline)
        throw new MainnetRunStalled("the follower not caught up in 10 min");
      await Bun.sleep(10);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = (await follower.cpuSeconds()) - cpuBefore;
    const blocks = Number(range.to - range.from + 1n);
    const rpc = callsSince(before, provider.stats());
    return {
      blocks,
      seconds: round(seconds, 2),
      blocksPerSecond: round(blocks / seconds, 1),
      callsPerBlock: round(rpc.calls / blocks, 2),
      /** The follow process's CPU: the receipts' tries are built there. */
      cpuSeconds: round(cpuSeconds, 2),
      receiptsRead: rpc.byMethod.eth_getBlockReceipts ?? 0,
      rpc,
    };
  } finally {
    await follower?.stop();
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
    "follow-fills": { type: "string", default: "0.44,0.6,0.75" },
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
  const fills = String(flags["follow-fills"])
    .split(",")
    .map((fill) => Number(fill));
  if (fills.some((fill) => !(fill > 0 && fill < 1))) {
    throw new RangeError(
      `--follow-fills: shares of bloom bits between 0 and 1, got ${flags["follow-fills"]}`,
    );
  }
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
    tailBlocks: TAIL_BLOCKS,
    busyTail: { fills, seed: `mainnet-${flags.seed}` },
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
    log("backfill: sparse chain through the provider, with a second node (RPC_CHECK_URL)");
    const checked = await backfill(scenario, sparse.url, sparseRange, {
      label: "sparse_check",
      chunkSize: sparseChunk,
      provider,
      checkNode: true,
    });
    const tail = { from: sparse.sparseHead - BigInt(TAIL_BLOCKS) + 1n, to: sparse.sparseHead };
    const staker = scenario.deployment.addresses.staker;
    const follows: Array<
      { fill: number | undefined; admitted: number } & Awaited<ReturnType<typeof follow>>
    > = [];
    for (const fill of [undefined, ...fills]) {
      log(
        `follow: the last ${TAIL_BLOCKS} blocks, blooms ${fill === undefined ? "empty" : `${fill} full`}`,
      );
      sparse.setTailFill(fill);
      let admitted = 0;
      for (let n = tail.from; n <= tail.to; n++) {
        const { logsBloom } = (await sparseHeader(sparse.url, n)) as { logsBloom: `0x${string}` };
        if (mayHoldStakerLogs(logsBloom, staker)) admitted++;
      }
      const run = await follow(scenario, sparse.url, tail, {
        label: `follow_${fill === undefined ? "empty" : String(fill).replace(".", "_")}`,
        provider,
      });
      follows.push({ fill, admitted, ...run });
    }
    const loadAfter = loadavg();
    // The share of blooms at each fill that admit the staker, over many more than the tail's.
    const draws = 5_000;
    const sampled = new SeededRandom(`bloom-shares-${flags.seed}`);
    const shares = fills.map((fill) => {
      let admitted = 0;
      for (let i = 0; i < draws; i++) {
        if (mayHoldStakerLogs(bloomWithFill(fill, sampled), staker)) admitted++;
      }
      return { fill, admitted: round(admitted / draws, 3) };
    });

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
      `\nthe chunk path's check: sparse with the Transfer check ${mainnetShaped.seconds} s, ${ratio(mainnetShaped, sparseLimit)} of the limit, ${mainnetShaped.rpc.calls} calls (${byMethod(mainnetShaped.rpc.byMethod)}); with a second node (RPC_CHECK_URL) instead ${checked.seconds} s, ${ratio(checked, sparseLimit)} of the limit, ${checked.rpc.calls} calls at RPC_URL (${byMethod(checked.rpc.byMethod)}) and ${checked.checkRpc?.calls} at the check node (${byMethod(checked.checkRpc?.byMethod ?? {})}), ${checked.rpc.callsOverBudget} + ${checked.checkRpc?.callsOverBudget} over budget`,
    );
    console.log(
      `\nthe follower over the last ${TAIL_BLOCKS} blocks (mainnet-shaped: ~150 transactions each, other contracts' logs), same provider and budget:\n`,
    );
    console.log(
      table([
        [
          "bloom bits set",
          "blocks admitting the staker",
          "receipts read",
          "seconds to caught up",
          "blocks/s",
          "calls",
          "calls/block",
          "follower CPU s",
          "over budget",
          "calls by method",
        ],
        ...follows.map((run) => [
          run.fill === undefined ? "none" : run.fill,
          run.admitted,
          run.receiptsRead,
          run.seconds,
          run.blocksPerSecond,
          run.rpc.calls,
          run.callsPerBlock,
          run.cpuSeconds,
          run.rpc.callsOverBudget,
          byMethod(run.rpc.byMethod),
        ]),
      ]),
    );
    console.log(
      `\nblooms that admit the staker by chance, of ${draws} random ones at each fill: ${shares.map(({ fill, admitted }) => `${fill} full: ${admitted}`).join(", ")}`,
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
        followFills: fills,
        tailBlocks: TAIL_BLOCKS,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadAfter,
      },
      raw: {
        target: TARGET_OF_LIMIT,
        dense: { backfill: dense, limit: denseLimit },
        sparse: { backfill: mainnetShaped, limit: sparseLimit },
        sparseWithCheckNode: checked,
        follow: follows,
        bloomShares: shares,
        sparseNodeOverhead: { backfill: backfillOverhead, limit: limitOverhead },
      },
      ratios: {
        dense_over_limit: ratio(dense, denseLimit),
        sparse_over_limit: ratio(mainnetShaped, sparseLimit),
        sparse_calls_over_budget: mainnetShaped.rpc.callsOverBudget,
        dense_calls_over_budget: dense.rpc.callsOverBudget,
        sparse_check_node_over_limit: ratio(checked, sparseLimit),
        ...Object.fromEntries(
          follows.map((run) => [
            `follow_seconds_${run.fill === undefined ? "empty" : run.fill}`,
            run.seconds,
          ]),
        ),
      },
      notes: [],
    });
    console.log(`\nwrote ${path}`);
  } finally {
    sparse.stop();
    await node.stop();
  }
}

/** A header as the sparse chain serves it. */
async function sparseHeader(url: string, number: bigint): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getBlockByNumber",
      params: [`0x${number.toString(16)}`, false],
    }),
  });
  return ((await response.json()) as { result: unknown }).result;
}

if (import.meta.main) runMain(main);
