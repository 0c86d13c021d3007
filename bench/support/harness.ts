/**
 * The run harness every benchmark shares: a chain, a scratch database and Redis prefix, child
 * processes, waits that fail as soon as a child exits, everything dropped on `await using`. A
 * run's own indexer talks to the node itself, so a proxy before the children counts them alone.
 */
import { stat } from "node:fs/promises";
import { type Address, http } from "viem";
import { freePort, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient } from "../../devnet/client.ts";
import { deployDevnet } from "../../devnet/deploy.ts";
import { Scenario } from "../../devnet/scenario.ts";
import { createIndexer } from "../../indexer/indexer.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { startScenarioChain } from "../../test/support/scenario-chain.ts";
import { type Child, spawnBun } from "./processes.ts";
import { log, round } from "./report.ts";

export class RunStalled extends Error {
  override name = "RunStalled";
}

/** Raw JSON-RPC to `url` (viem's transport, no retries): what the node answers, unformatted. */
export const rpc = (url: string) => http(url, { retryCount: 0, timeout: 120_000 })({}).request;

/** Profiler flags for a child when `enabled`: its CPU profile, as Markdown, in bench/results. */
export const profileArgs = (enabled: boolean, name: string) =>
  enabled
    ? ["--cpu-prof-md", "--cpu-prof-dir=bench/results/profiles", `--cpu-prof-name=${name}.md`]
    : [];

/** A fresh anvil with the devnet deployed and a scenario of `wallets` wallets prepared on it. */
export async function startDevnet(seed: string, wallets: number) {
  const node = await startAnvil();
  const client = createDevnetClient(node.rpcUrl);
  const deployment = await deployDevnet(client);
  const scenario = await Scenario.prepare(client, deployment, { seed, wallets });
  return { node, client, deployment, scenario };
}

export type ScenarioSpec = { seed: string; events: number; wallets?: number };

/** One wallet per 45 events: the 100,000-event scenario then leaves over 10,000 citizens staked. */
export const defaultWallets = (events: number) => Math.max(4, Math.round(events / 45));

/** The scenario's chain on an anvil taking bodies past 2 MiB (the 100k scenario's batches). */
export async function loadScenario({ wallets, ...given }: ScenarioSpec) {
  const spec = { ...given, wallets: wallets ?? defaultWallets(given.events) };
  log(`scenario ${spec.seed}-${spec.events}: loading (generating it first if not cached)`);
  const started = performance.now();
  const anvil = { unlimitedRequestSize: true, startTimeoutMs: 600_000 };
  const chain = await startScenarioChain({ ...spec, anvil });
  const loadSeconds = round((performance.now() - started) / 1000, 1);
  const { progress, deployment, citizensStaked = null, generatedSeconds = null } = chain;
  const how = chain.generated ? "generated and loaded" : "loaded";
  log(`scenario ${how} in ${loadSeconds} s (head ${progress.block})`);
  const stateBytes = (await stat(chain.stateFile)).size;
  // The chain's figures (staker events, transactions, blocks), its head, and the cache's.
  const figures = { citizensStaked, generatedSeconds, stateBytes, head: progress.block };
  const scenario = { ...spec, ...progress, ...figures, deployment };
  const node = { rpcUrl: chain.node.rpcUrl, pid: chain.node.process.pid, stop: chain.stop };
  return { scenario, node, generated: chain.generated, loadSeconds };
}

export type LoadedScenario = Awaited<ReturnType<typeof loadScenario>>;

type Wait = { timeoutMs?: number; pollMs?: number; failed?: () => Promise<string | undefined> };

/** A scratch database and Redis prefix, and the child processes started against them. */
export async function openScratch(label: string, existingDatabaseUrl?: string) {
  const database = existingDatabaseUrl ? undefined : await createScratchDatabase(label);
  const redis = createScratchRedisPrefix(label);
  const databaseUrl = existingDatabaseUrl ?? database!.url;
  const children: Child[] = [];
  return {
    databaseUrl,
    redis,
    children,
    env: { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix },
    spawn(name: string, args: string[], settings: Record<string, string>) {
      const child = spawnBun(name, args, { ...this.env, ...settings });
      children.push(child);
      return child;
    },
    /** Polls `done` until it holds; throws when a child exits, `failed` says why, or time's up. */
    async waitUntil(what: string, done: () => Promise<boolean>, wait: Wait = {}) {
      const { timeoutMs = 120_000, pollMs = 20, failed } = wait;
      const deadline = Date.now() + timeoutMs;
      while (!(await done())) {
        const why = await failed?.();
        if (why) throw new RunStalled(why);
        for (const child of children) child.assertAlive();
        if (Date.now() > deadline) throw new RunStalled(`${what}: not within ${timeoutMs} ms`);
        await Bun.sleep(pollMs);
      }
    },
    /** Starts an HTTP server on a free port, rate limit far off (its bookkeeping still runs). */
    async serve(name: string, args: string[], settings: Record<string, string> = {}) {
      const port = await freePort();
      const served = { HOST: "127.0.0.1", PORT: String(port), RATE_LIMIT_PER_MINUTE: "1000000000" };
      const child = this.spawn(name, args, { ...served, LOG_LEVEL: "warn", ...settings });
      const base = `http://127.0.0.1:${port}`;
      const answers = () =>
        fetch(`${base}/healthz`).then(
          (response) => response.arrayBuffer().then(() => true),
          () => false,
        );
      await this.waitUntil(`${name} answering`, answers, { timeoutMs: 30_000, pollMs: 50 });
      return { child, base };
    },
    async stopChildren() {
      for (const child of children) await child.stop();
      return children;
    },
    async [Symbol.asyncDispose]() {
      await this.stopChildren();
      await redis.clean();
      await database?.drop();
    },
  };
}

export type Scratch = Awaited<ReturnType<typeof openScratch>>;

export type RunSettings = {
  label: string;
  /** Where this process's indexer reads: the node itself, never the proxy being measured. */
  rpcUrl: string;
  staker: Address;
  chainId?: number;
  chunkSize: number;
  maxLogRange?: number;
  /** 0 by default: the cached chains never reorg, so chunk jobs may index up to the head. */
  finalityDepth?: number;
  /** A database to index into instead of a scratch one (the API bench's, kept between runs). */
  databaseUrl?: string;
};

/** A scratch run with its own indexer in this process, to queue the chunks and watch them. */
export async function openRun(settings: RunSettings) {
  const scratch = await openScratch(settings.label, settings.databaseUrl);
  const maxLogRange = settings.maxLogRange ?? 10_000;
  const indexer = await createIndexer({
    ...settings,
    databaseUrl: scratch.databaseUrl,
    redis: { url: scratch.redis.url },
    queuePrefix: scratch.redis.prefix,
    concurrency: 1,
    confirmations: 0,
    followIntervalMs: 200,
    maxLogRange,
    finalityDepth: settings.finalityDepth ?? 0,
  });
  const failedChunk = async () => {
    const [failed] = await indexer.queues.chunks.getFailed(0, 0);
    return failed && `chunk ${failed.id} failed: ${failed.failedReason}`;
  };
  return {
    ...scratch,
    indexer,
    /** The settings an indexer child process of the run reads (STAKER_ADDRESS and the like). */
    env: {
      ...scratch.env,
      STAKER_ADDRESS: settings.staker,
      ...(settings.chainId !== undefined && { CHAIN_ID: String(settings.chainId) }),
      CHUNK_SIZE: String(settings.chunkSize),
      MAX_LOG_RANGE: String(maxLogRange),
      LOG_LEVEL: "info",
    },
    /** Starts a `bun scripts/cli.ts <role>` child per name; waits until they all take jobs. */
    async startIndexers(
      role: "worker" | "follow",
      names: string[],
      settings: Record<string, string>,
      cpuProfile = false,
    ) {
      const args = (name: string) => [...profileArgs(cpuProfile, name), "scripts/cli.ts", role];
      const children = names.map((name) => this.spawn(name, args(name), settings));
      const queue = indexer.queues[role === "worker" ? "chunks" : "follow"];
      const connected = async () => (await queue.getWorkersCount()) >= names.length;
      const what = `${names.length} ${role} processes connecting`;
      await scratch.waitUntil(what, connected, { timeoutMs: 60_000, pollMs: 10 });
      return children;
    },
    /** Queues `range`'s chunk jobs (not for a follower) and waits until the checkpoint is there. */
    async indexRange(range: { from: bigint; to: bigint }, { queue = true, pollMs = 20 } = {}) {
      const started = performance.now();
      const { to, chunks } = queue
        ? await indexer.enqueueBackfill({ startBlock: range.from, to: range.to })
        : { to: range.to, chunks: 0 };
      const reached = async () => ((await indexer.store.checkpoint())?.indexedBlock ?? -1n) >= to;
      const options = { timeoutMs: 30 * 60_000, pollMs, failed: failedChunk };
      await scratch.waitUntil(`indexing to ${to}`, reached, options);
      return { to, chunks, seconds: (performance.now() - started) / 1000 };
    },
    async [Symbol.asyncDispose]() {
      await scratch.stopChildren();
      await indexer.close();
      await scratch[Symbol.asyncDispose]();
    },
  };
}
