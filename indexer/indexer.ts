import type { Address } from "viem";
import { createDatabase } from "../db/client.ts";
import { nodeFailure } from "../lib/connection-checks.ts";
import { logger } from "../lib/log.ts";
import { createOutageReporter, type ErrorSource } from "../lib/outages.ts";
import { openRedis, type RedisTarget, redisFullRefusals, redisVariable } from "../lib/redis.ts";
import { ChainMismatch, readChainId } from "./chain/chain-id.ts";
import type { CheckNode } from "./chain/check-node.ts";
import { discoverContracts } from "./chain/contracts.ts";
import { readChainTip } from "./chain/finality.ts";
import { LogRangeGovernor } from "./chain/logs.ts";
import { createNodeClients } from "./chain/node-clients.ts";
import { RequestBudget } from "./chain/request-budget.ts";
import { createChunkWorkers } from "./chunk-workers/chunk-workers.ts";
import { ClaimedCitizenReads } from "./chunk-workers/citizen-claims.ts";
import { EventBudget } from "./chunk-workers/event-budget.ts";
import { createHeapCeiling, HEAP_CEILING_BYTES } from "./chunk-workers/heap-ceiling.ts";
import { CitizenReadCache } from "./fetch/citizen-read-cache.ts";
import { createFetchStage } from "./fetch/fetch-range.ts";
import { createFollowLease, readFollowLease } from "./follower/follow-lease.ts";
import { createFollower } from "./follower/follower.ts";
import { createMetadataRefresher } from "./metadata-refresher/metadata-refresh.ts";
import { createIndexerMetrics, type IndexerMetrics } from "./metrics.ts";
import { createBackfillQueue } from "./operator/backfill-queue.ts";
import { createHandClaimSettler } from "./operator/hand-claims.ts";
import { createLostLockReporter, holdWorkersWhile } from "./queues/job-worker.ts";
import { createQueues, readOnlyQueues } from "./queues/queues.ts";
import { createReconciler } from "./reconciler/reconciler.ts";
import { createHealthRecords } from "./reports/health.ts";
import { createRpcReport } from "./reports/rpc-report.ts";
import { createIndexerStore, type IndexerStore } from "./store/index.ts";

export interface IndexerOptions {
  rpcUrl: string;
  /** The node's WebSocket endpoint: new heads trigger a follow tick the moment they arrive. */
  wsUrl?: string;
  databaseUrl: string;
  /** REDIS_URL, or the sentinels that name the primary. */
  redis: RedisTarget;
  queuePrefix: string;
  staker: Address;
  /** Checked against the node when given. */
  chainId?: number;
  chunkSize: number;
  concurrency: number;
  confirmations: number;
  /** Blocks below the head taken as final; absent means the node's `finalized` tag. */
  finalityDepth?: number;
  followIntervalMs: number;
  /** A leading follow process that dies is replaced within about this long (FOLLOW_LEASE_MS). */
  followLeaseMs?: number;
  maxLogRange: number;
  /** A second node that answers every chunk's spans too (RPC_CHECK_URL; see check-node.ts). */
  checkRpcUrl?: string;
  /** A killed worker's chunk returns to the queue about this long after it died. */
  jobLockMs?: number;
  /** Time between the follower's metadata refresh rounds (one page of tokenURIs); 0 is off. */
  metadataRefreshIntervalMs?: number;
  /** Blocks a follow tick indexes itself before it hands the range to chunk jobs. */
  inlineBlocks?: number;
  /** Staker events this process's chunk jobs work on at once (EVENTS_IN_FLIGHT). */
  eventsInFlight?: number;
  rpcTimeoutMs?: number;
  /** Seconds an unused Postgres connection is kept (tests: a file holds several indexers). */
  databaseIdleSeconds?: number;
  /** This process's JSON-RPC calls per second over HTTP (RPC_MAX_REQUESTS_PER_SECOND); unset: no cap. */
  rpcMaxRequestsPerSecond?: number;
  /**
   * For commands that only look (status): the queues write nothing to Redis. BullMQ otherwise
   * writes each queue's meta key when it connects, creating keys under any prefix it is given.
   */
  readOnly?: boolean;
}

/**
 * Builds one indexer process: the chain client, the store and the queues, wired into one factory
 * per role (one folder each: `follower/`, `chunk-workers/`, `reconciler/`, `metadata-refresher/`,
 * `reports/`, `operator/`); `start` starts the workers. Its state is in Postgres and Redis alone.
 */
export async function createIndexer(options: IndexerOptions) {
  const log = logger("indexer");
  const metrics = createIndexerMetrics();
  const budget =
    options.rpcMaxRequestsPerSecond === undefined
      ? undefined
      : new RequestBudget(options.rpcMaxRequestsPerSecond);
  const { client, logClient, receiptsClient } = createNodeClients(options.rpcUrl, {
    timeoutMs: options.rpcTimeoutMs,
    observer: metrics.rpc,
    budget,
  });
  const chainId = await readChainId(client, options.chainId);
  // Only workers ask the check node: a command that only looks (status) needs it not.
  const checkNode =
    options.checkRpcUrl && !options.readOnly
      ? await openCheckNode(options.checkRpcUrl, chainId, options)
      : undefined;
  const contracts = await discoverContracts(client, options.staker);
  const database = createDatabase(options.databaseUrl, {
    max: options.concurrency + 2,
    idleTimeout: options.databaseIdleSeconds,
  });
  const store = countingRollbacks(createIndexerStore(database.db), metrics);
  const redis = openRedis(options.redis, "queues");
  const queues = options.readOnly
    ? readOnlyQueues(redis, options.queuePrefix)
    : createQueues(redis, options.queuePrefix);
  // One warning per Redis outage (away, or full), not a line (or, without a listener, a stack)
  // per retry: a full Redis refused every worker's every poll, 105,166 lines in 70 s.
  const fullRedis = redisFullRefusals(redis, `${options.queuePrefix}:full-probe`);
  const held = holdWorkersWhile(fullRedis, log);
  const redisOutages = createOutageReporter(redisVariable(options.redis), log, undefined, {
    ...fullRedis,
    resume: held.release,
  });
  redisOutages.watch(queues.chunks, queues.follow);
  redis.on("ready", () => redisOutages.recovered());
  // A job a worker lost its lock on (paused, or in a failover) runs again: a warning, not an
  // error of Redis's.
  const lostLock = createLostLockReporter(log);
  const watchWorkers = (...workers: ErrorSource[]) => {
    for (const worker of workers) {
      worker.on("error", (error) => {
        if (!lostLock(error)) redisOutages.error(held.holdOn(worker, error));
      });
    }
  };
  metrics.readAtScrape({
    indexedBlock: async () => (await store.checkpoint())?.indexedBlock,
    chainTip: () => readChainTip(client, options.finalityDepth),
    counts: () => store.counts(),
    queueCounts: async () => {
      const states = ["waiting", "active", "delayed", "failed"] as const;
      const [chunks, follow] = await Promise.all([
        queues.chunks.getJobCounts(...states),
        queues.follow.getJobCounts(...states),
      ]);
      return { chunks, follow };
    },
  });
  const governor = new LogRangeGovernor(options.maxLogRange);
  const finalityDepth = options.finalityDepth;
  const eventBudget = new EventBudget(options.eventsInFlight ?? 2_000);
  // The chunks in flight meet at most one citizen per event they hold.
  const citizenReads = new ClaimedCitizenReads(
    redis,
    options.queuePrefix,
    {},
    new CitizenReadCache(eventBudget.limit),
  );
  const fetchDeps = {
    client,
    logClient,
    receiptsClient,
    contracts,
    governor,
    checkNode,
    knownCitizens: store.knownCitizens,
    citizenReads,
  };
  const deps = {
    ...fetchDeps,
    fetch: createFetchStage(fetchDeps),
    store,
    eventBudget,
    heapCeiling: createHeapCeiling(HEAP_CEILING_BYTES),
    queues,
    log,
    finalityDepth,
  };
  const followSettings = {
    chunkSize: options.chunkSize,
    confirmations: options.confirmations,
    inlineBlocks: options.inlineBlocks ?? 64,
    finalityDepth,
  };
  const metadata = createMetadataRefresher({
    client,
    contracts,
    store,
    redis,
    queuePrefix: options.queuePrefix,
    log: logger("metadata"),
    intervalMs: options.metadataRefreshIntervalMs ?? 0,
  });
  const health = createHealthRecords({ store, metrics, log });
  const chunkWorkers = createChunkWorkers({
    deps,
    health,
    redis,
    queuePrefix: options.queuePrefix,
    concurrency: options.concurrency,
    jobLockMs: options.jobLockMs,
    log,
  });
  const follower = createFollower({
    deps,
    settings: followSettings,
    health,
    redis,
    queuePrefix: options.queuePrefix,
    intervalMs: options.followIntervalMs,
    wsUrl: options.wsUrl,
    log,
  });
  // Only the lease holder follows; a lost lease stops its follower, letting its tick finish.
  const lease = createFollowLease({
    redis,
    queuePrefix: options.queuePrefix,
    leaseMs: options.followLeaseMs ?? 2_000,
    async lead() {
      watchWorkers(await follower.start());
      await follower.tickNow();
      metrics.leading(true);
    },
    async standBy() {
      metrics.leading(false);
      await follower.close();
    },
    log: logger("follow-lease"),
  });
  const reconciler = createReconciler({ store, queues, log, chunkSize: options.chunkSize });
  const rpcReport = createRpcReport({ metrics, store, log });
  const backfill = createBackfillQueue({
    client,
    store,
    contracts,
    queues,
    chainId,
    chunkSize: options.chunkSize,
    finalityDepth,
  });
  const handClaims = createHandClaimSettler({ client, contracts, store });
  /** A start in progress: a close (SIGTERM at any time) waits for it, then undoes all of it. */
  let starting: Promise<void> | undefined;

  return {
    client,
    contracts,
    chainId,
    store,
    queues,
    database,
    deps,
    followSettings,
    metrics,

    /** Creates the checkpoint on a fresh database: indexing starts at `startBlock`. */
    ensureCheckpoint: (startBlock: bigint) =>
      store.ensureCheckpoint(contracts.staker, chainId, startBlock),

    /** Head and finality boundary as this indexer sees them (FINALITY_DEPTH or the node's tag). */
    chainTip: () => readChainTip(client, finalityDepth),

    /** Queues chunk jobs for a range, the checkpoint and the finality boundary allowing. */
    enqueueBackfill: backfill.enqueue,

    /**
     * Reads the metadata of every citizen with a recorded read failure again, at the head, and
     * keeps what now reads (the served name and image change with it).
     */
    retryReadFailures: () => metadata.retryFailures(),

    /** Traces inferred Hand flags again, once the node offers call traces. */
    settleInferredHandClaims: handClaims.settleInferred,

    /**
     * Reads every citizen's metadata again at the head, many to an eth_call, and keeps what
     * changed (a recorded failure that now reads is cleared); a tokenURI that does not read at
     * the head keeps what is stored and is counted.
     */
    refreshMetadata: (progress?: (done: number) => void) => metadata.refreshAll(progress),

    /** The follow process that leads and those standing by, as Redis says now (status). */
    followLease: () => readFollowLease(redis, options.queuePrefix),

    /** Re-queues lost work once (what every worker process does every few seconds). */
    reconcile: () => reconciler.once(),

    /**
     * Runs chunk workers and, with `follow`, stands for the follower lease: the head follower
     * runs while this process holds it.
     */
    start({ follow }: { follow: boolean }) {
      starting = (async () => {
        watchWorkers(chunkWorkers.start());
        rpcReport.start();
        reconciler.start();
        if (follow) {
          await lease.start();
          await metadata.start();
          watchWorkers(...metadata.watched());
        }
      })();
      return starting;
    },

    /** Stops taking work, lets running jobs finish, and closes every connection. */
    async close() {
      // A start cut short would go on creating workers on closed connections.
      await starting?.catch(() => {});
      rpcReport.stop();
      reconciler.stop();
      const hadWorkers = chunkWorkers.started();
      await Promise.all([lease.stop(), chunkWorkers.close(), metadata.close()]);
      if (hadWorkers) await rpcReport.final();
      await queues.close();
      redis.disconnect();
      await database.close();
    },
  };
}

/** The store, with every rollback (a reorg's, or an operator's) counted in the metrics. */
function countingRollbacks(store: IndexerStore, metrics: IndexerMetrics): IndexerStore {
  return {
    ...store,
    async rollbackTo(ancestor) {
      const result = await store.rollbackTo(ancestor);
      metrics.rolledBack(result.removedEvents);
      return result;
    },
  };
}

export type Indexer = Awaited<ReturnType<typeof createIndexer>>;

/**
 * The check node's clients, once it has said it is on the indexer's chain. Its calls are counted
 * by no metric and spend none of RPC_URL's budget: it is another operator's node, with a budget
 * of its own at the same RPC_MAX_REQUESTS_PER_SECOND (without one, the mainnet-shaped bench's
 * check provider answered 3 of 225 calls with 429).
 */
async function openCheckNode(
  url: string,
  chainId: number,
  options: Pick<IndexerOptions, "rpcTimeoutMs" | "maxLogRange" | "rpcMaxRequestsPerSecond">,
): Promise<CheckNode> {
  const budget =
    options.rpcMaxRequestsPerSecond === undefined
      ? undefined
      : new RequestBudget(options.rpcMaxRequestsPerSecond);
  const clients = createNodeClients(url, { timeoutMs: options.rpcTimeoutMs, budget });
  // Named for the operator: a check node that does not answer is waited for at start-up (as
  // RPC_URL is), one that refuses stops the process, either way naming RPC_CHECK_URL.
  await readChainId(clients.client, chainId, "RPC_CHECK_URL").catch((error: unknown) => {
    throw error instanceof ChainMismatch ? error : nodeFailure("RPC_CHECK_URL", error);
  });
  return { ...clients, governor: new LogRangeGovernor(options.maxLogRange) };
}
