/**
 * Backfill throughput against its own limit, in one run on one loaded scenario chain:
 *
 *   limit: the same staker logs fetched with raw eth_getLogs, chunk by chunk, and COPYed as raw
 *          rows into a scratch table (what moving the data alone costs);
 *   real:  the project's backfill from empty tables to caught up — BullMQ chunk jobs, reads at
 *          each stake's block, projections — with 1, 2 and 4 `worker` processes.
 *
 * `bun bench/backfill.ts [--events 100000] [--workers 1,2,4] [--chunk-size 4] [--smoke]`
 */
import { readFile } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import postgres from "postgres";
import { type Address, encodeFunctionData, getAbiItem, toEventSelector } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { createIndexer } from "../indexer/indexer.ts";
import { fetchRange } from "../indexer/jobs/fetch-range.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import { createScratchRedisPrefix } from "../scratch/redis.ts";
import type { BenchAnvil } from "./support/anvil-process.ts";
import { numberList, readFlags, runMain, wholeNumber } from "./support/flags.ts";
import { type Child, coresBetween, cpuByRole, spawnBun } from "./support/processes.ts";
import { log, percentile, round, table, writeReport } from "./support/report.ts";
import { type CachedScenario, defaultWallets, loadScenario } from "./support/scenario-cache.ts";

export class BackfillStalled extends Error {
  override name = "BackfillStalled";
}

const STAKER_TOPICS = (["Stake", "Withdraw", "Claim"] as const).map((name) =>
  toEventSelector(getAbiItem({ abi: stakerAbi, name }) as never),
);

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

/** Fetches the range chunk by chunk (the next fetch overlapping the current COPY). */
async function measureLimit(scenario: CachedScenario, node: BenchAnvil, chunkSize: number) {
  const rpcUrl = node.rpcUrl;
  const database = await createScratchDatabase("bench_limit");
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  try {
    await sql`create table raw_logs (
      block_number bigint not null, log_index integer not null, block_hash text not null,
      transaction_hash text not null, topics text[] not null, data text not null,
      primary key (block_number, log_index))`;
    const ranges = chunks(scenario.deployment.deployBlock, scenario.head, chunkSize);
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
 * The node's own cost of one view call at the head and at old blocks, sequentially: the real
 * backfill reads at every stake's block, so this is what its chunk jobs wait on.
 */
async function probeHistoricalCalls(scenario: CachedScenario, rpcUrl: string, calls: number) {
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
 * fetching (logs, reads at each stake's block, projection to rows) and writing (the locked
 * transaction: inserts, checkpoint, staked_citizens rebuild). Says which half the real run
 * waits on.
 */
async function measurePhases(scenario: CachedScenario, node: BenchAnvil, chunkSize: number) {
  const database = await createScratchDatabase("bench_phases");
  const redis = createScratchRedisPrefix("bench_phases");
  const indexer = await createIndexer({
    rpcUrl: node.rpcUrl,
    databaseUrl: database.url,
    redisUrl: redis.url,
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

async function measureReal(
  scenario: CachedScenario,
  node: BenchAnvil,
  settings: { workers: number; concurrency: number; chunkSize: number; cpuProfile: boolean },
) {
  const rpcUrl = node.rpcUrl;
  const label = `bench_backfill_w${settings.workers}`;
  const database = await createScratchDatabase(label);
  const redis = createScratchRedisPrefix(label);
  const staker = scenario.deployment.addresses.staker;
  const indexer = await createIndexer({
    rpcUrl,
    databaseUrl: database.url,
    redisUrl: redis.url,
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
      const profile = settings.cpuProfile
        ? [
            "--cpu-prof-md",
            `--cpu-prof-dir=bench/results/profiles`,
            `--cpu-prof-name=worker-w${settings.workers}-${n}.md`,
          ]
        : [];
      workers.push(
        spawnBun(`backfill-w${settings.workers}-${n}`, [...profile, "scripts/cli.ts", "worker"], {
          RPC_URL: rpcUrl,
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
    const cpuBefore = await cpuByRole({ anvil: node.pid, children: workers });
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
    const cores = coresBetween(
      cpuBefore,
      await cpuByRole({ anvil: node.pid, children: workers }),
      seconds,
    );
    const events = await indexer.store.countEvents(scenario.deployment.deployBlock, to);
    const peakRss = Math.max(...(await Promise.all(workers.map((worker) => worker.rssBytes()))));
    const [staked] = await indexer.database.client<{ count: string }[]>`
      select count(*)::text as count from staked_citizens`;
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
      chunks: queued,
      events,
      stakedCitizens: Number(staked?.count ?? 0),
      seconds: round(seconds, 3),
      eventsPerSecond: round(events / seconds, 0),
      reproject: {
        seconds: round(reprojectSeconds, 3),
        eventsPerSecond: round(events / reprojectSeconds, 0),
      },
      cores: {
        workers: cores.children,
        anvil: cores.anvil,
        postgres: cores.postgres,
        redis: cores.redis,
      },
      workerRssBytesAtEnd: peakRss,
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

async function main() {
  const flags = readFlags({
    events: { type: "string" },
    seed: { type: "string", default: "bench" },
    workers: { type: "string" },
    concurrency: { type: "string", default: "4" },
    "chunk-size": { type: "string", default: "4" },
    "cpu-prof": { type: "boolean", default: false },
    phases: { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
  });
  const smoke = flags.smoke === true;
  const events = wholeNumber("events", flags.events ?? (smoke ? 2_000 : 100_000));
  const workerCounts = numberList("workers", flags.workers ?? (smoke ? "1,2" : "1,2,4"));
  const concurrency = wholeNumber("concurrency", flags.concurrency);
  const chunkSize = wholeNumber("chunk-size", flags["chunk-size"]);
  const startedAt = new Date().toISOString();
  const spec = { seed: String(flags.seed), events, wallets: defaultWallets(events) };

  const loaded = await loadScenario(spec, log);
  const { scenario, node } = loaded;
  try {
    log(`limit: raw eth_getLogs + COPY, chunks of ${chunkSize} blocks`);
    const limit = await measureLimit(scenario, node, chunkSize);
    log(`limit: ${limit.events} events in ${limit.seconds} s (${limit.eventsPerSecond}/s)`);
    const nodeProbe = await probeHistoricalCalls(scenario, node.rpcUrl, smoke ? 10 : 100);
    log(
      `eth_call: ${nodeProbe.msPerCallAtHead} ms at the head, ${nodeProbe.msPerCallAtHeadMinusOne} ms one block back, ${nodeProbe.msPerCallAtMiddleBlock} ms at block ${nodeProbe.middleBlock}`,
    );
    let phases: Awaited<ReturnType<typeof measurePhases>> | undefined;
    if (flags.phases === true) {
      log("phases: the backfill chunk by chunk in this process, fetch and write timed apart");
      phases = await measurePhases(scenario, node, chunkSize);
      log(
        `  fetch ${phases.fetchSeconds} s, write ${phases.writeSeconds} s (${phases.eventsPerSecond} events/s)`,
      );
    }
    const real = [];
    for (const workers of workerCounts) {
      log(`real backfill: ${workers} worker process(es) x concurrency ${concurrency}`);
      const result = await measureReal(scenario, node, {
        workers,
        concurrency,
        chunkSize,
        cpuProfile: flags["cpu-prof"] === true,
      });
      log(`  ${result.events} events in ${result.seconds} s (${result.eventsPerSecond}/s)`);
      real.push(result);
    }
    const ratios: Record<string, number | null> = {};
    for (const result of real) {
      ratios[`real_w${result.workers}_over_limit`] = round(
        result.eventsPerSecond / limit.eventsPerSecond,
        4,
      );
    }
    const reproject = real[0]?.reproject;
    if (reproject) {
      ratios.reproject_over_limit = round(reproject.eventsPerSecond / limit.eventsPerSecond, 4);
    }
    const rows: (string | number)[][] = [
      ["run", "events", "seconds", "events/s", "ratio to limit"],
      ["limit (eth_getLogs + COPY)", limit.events, limit.seconds, limit.eventsPerSecond, 1],
      ...(reproject && real[0]
        ? [
            [
              "reproject (stored events and reads, no RPC)",
              real[0].events,
              reproject.seconds,
              reproject.eventsPerSecond,
              ratios.reproject_over_limit ?? "-",
            ],
          ]
        : []),
      ...real.map((result) => [
        `backfill, ${result.workers} worker${result.workers > 1 ? "s" : ""} x ${result.concurrencyPerWorker}`,
        result.events,
        result.seconds,
        result.eventsPerSecond,
        ratios[`real_w${result.workers}_over_limit`] ?? "-",
      ]),
    ];
    console.log(
      `\nbackfill of ${scenario.stakerEvents} staker events over blocks ${scenario.deployment.deployBlock}..${scenario.head} (target ratio >= 0.5)\n`,
    );
    console.log(table(rows));
    const path = await writeReport({
      name: "backfill",
      smoke,
      startedAt,
      parameters: {
        ...spec,
        chunkSizeBlocks: chunkSize,
        concurrencyPerWorker: concurrency,
        workerCounts,
        blocks: Number(scenario.head - scenario.deployment.deployBlock + 1n),
        cacheGenerated: loaded.generated,
        cacheLoadSeconds: loaded.loadSeconds,
        scenarioGeneratedSeconds: scenario.generatedSeconds,
      },
      raw: {
        nodeProbe,
        phases,
        scenario: {
          stakerEvents: scenario.stakerEvents,
          transactions: scenario.transactions,
          citizensStaked: scenario.citizensStaked,
        },
        limit,
        real,
      },
      ratios,
      notes: [],
    });
    console.log(`\nwrote ${path}`);
  } finally {
    await node.stop();
  }
}

if (import.meta.main) runMain(main);
