import { type Job, Queue, UnrecoverableError, Worker } from "bullmq";
import { type Address, createPublicClient, type Hex, webSocket } from "viem";
import { createDatabase } from "../db/client.ts";
import { isConnectionFailure } from "../lib/connection-checks.ts";
import { errorSummary, logger } from "../lib/log.ts";
import { createOutageReporter } from "../lib/outages.ts";
import { isTransientRpcFailure } from "../lib/rpc-failures.ts";
import { ReadReverted } from "./chain/call-failure.ts";
import { createChainClient } from "./chain/client.ts";
import { discoverContracts } from "./chain/contracts.ts";
import { readChainTip } from "./chain/finality.ts";
import { settleInferredHandFlag } from "./chain/hand-flag.ts";
import { LogRangeGovernor, LogRangeTooLarge } from "./chain/logs.ts";
import { RequestBudget } from "./chain/request-budget.ts";
import { ClaimedCitizenReads } from "./jobs/citizen-claims.ts";
import { EventBudget } from "./jobs/event-budget.ts";
import { ChunkJobsParked, followTick } from "./jobs/follow.ts";
import { indexRange } from "./jobs/index-range.ts";
import { createMetadataRefresher } from "./jobs/metadata-refresh.ts";
import {
  type ChunkJobData,
  createQueues,
  enqueueRange,
  FOLLOW_SCHEDULER_ID,
  MAX_STALLED_COUNT,
  QUEUE,
  type Queues,
  redisConnection,
} from "./jobs/queues.ts";
import { markUnrecoverable, requeueLostRanges } from "./jobs/reconcile.ts";
import { createIndexerMetrics, type IndexerMetrics } from "./metrics.ts";
import { ReorgTooDeep } from "./reorg/fork-point.ts";
import {
  CheckpointMismatch,
  createIndexerStore,
  type IndexerRole,
  type IndexerStore,
} from "./store/index.ts";

export interface IndexerOptions {
  rpcUrl: string;
  /** The node's WebSocket endpoint: new heads trigger a follow tick the moment they arrive. */
  wsUrl?: string;
  databaseUrl: string;
  redisUrl: string;
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
  maxLogRange: number;
  /** A killed worker's chunk returns to the queue about this long after it died. */
  jobLockMs?: number;
  /** Time between the follower's metadata refresh rounds (one page of tokenURIs); 0 is off. */
  metadataRefreshIntervalMs?: number;
  /** Blocks a follow tick indexes itself before it hands the range to chunk jobs. */
  inlineBlocks?: number;
  /** Staker events this process's chunk jobs work on at once (EVENTS_IN_FLIGHT). */
  eventsInFlight?: number;
  rpcTimeoutMs?: number;
  /** This process's JSON-RPC calls per second over HTTP (RPC_MAX_REQUESTS_PER_SECOND); unset: no cap. */
  rpcMaxRequestsPerSecond?: number;
  /**
   * For commands that only look (status): the queues write nothing to Redis. BullMQ otherwise
   * writes each queue's meta key when it connects, creating keys under any prefix it is given.
   */
  readOnly?: boolean;
}

export class ChainMismatch extends Error {
  override name = "ChainMismatch";
}

export class BackfillLeavesGap extends Error {
  override name = "BackfillLeavesGap";
}

/** A backfill asked for blocks above the finality boundary, which only the follower indexes. */
export class RangeAboveFinality extends Error {
  override name = "RangeAboveFinality";
}

/** Errors no retry can fix: the job fails at once and says why. */
const FATAL = [
  CheckpointMismatch,
  ReorgTooDeep,
  ChainMismatch,
  ReadReverted,
  LogRangeTooLarge,
  ChunkJobsParked,
];
const isFatal = (error: unknown) => FATAL.some((kind) => error instanceof kind);

/** How often every process with workers looks for lost work (see requeueLostRanges). */
export const RECONCILE_INTERVAL_MS = 5_000;
/**
 * How often the follower puts its scheduler back. A Redis that lost its keys loses the
 * scheduled ticks with them, and a follower blind for long lets a shallow reorg sink below the
 * finality depth before it is seen (then only an operator can recover): a second at most.
 */
const FOLLOW_SCHEDULER_REFRESH_MS = 1_000;
/** How often a process with workers adds its RPC calls to rpc_calls (and once when it closes). */
const RPC_REPORT_INTERVAL_MS = 5_000;

/**
 * Builds one indexer process: the chain client, the store, the queues, and (on `start`) the
 * workers. Everything it keeps is in Postgres and Redis, so any number of these can run.
 */
export async function createIndexer(options: IndexerOptions) {
  const log = logger("indexer");
  const metrics = createIndexerMetrics();
  const budget =
    options.rpcMaxRequestsPerSecond === undefined
      ? undefined
      : new RequestBudget(options.rpcMaxRequestsPerSecond);
  const client = createChainClient(options.rpcUrl, {
    timeoutMs: options.rpcTimeoutMs,
    observer: metrics.rpc,
    budget,
  });
  const logClient = createChainClient(options.rpcUrl, {
    timeoutMs: options.rpcTimeoutMs,
    jsonRpcBatch: false,
    observer: metrics.rpc,
    budget,
  });
  const chainId = await client.getChainId();
  if (options.chainId !== undefined && options.chainId !== chainId) {
    throw new ChainMismatch(
      `CHAIN_ID is ${options.chainId} but the node at RPC_URL serves chain ${chainId}`,
    );
  }
  const contracts = await discoverContracts(client, options.staker);
  const database = createDatabase(options.databaseUrl, { max: options.concurrency + 2 });
  const store = countingRollbacks(createIndexerStore(database.db), metrics);
  const redis = redisConnection(options.redisUrl);
  const queues = options.readOnly
    ? readOnlyQueues(redis, options.queuePrefix)
    : createQueues(redis, options.queuePrefix);
  // One warning per Redis outage, not a line (or, without a listener, a stack) per retry.
  const redisOutages = createOutageReporter("REDIS_URL", log);
  // Jobs fail on every query while Postgres is away: one warning per outage, not one per job.
  const databaseOutages = createOutageReporter("DATABASE_URL", log);
  // Likewise while the node resets, times out or answers 5xx or 429; the jobs retry meanwhile.
  const rpcOutages = createOutageReporter("RPC_URL", log, isTransientRpcFailure);
  redisOutages.watch(queues.chunks, queues.follow);
  redis.on("ready", () => redisOutages.recovered());
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
  const citizenReads = new ClaimedCitizenReads(redis, options.queuePrefix);
  const eventBudget = new EventBudget(options.eventsInFlight ?? 2_000);
  const deps = {
    client,
    logClient,
    store,
    contracts,
    governor,
    citizenReads,
    eventBudget,
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
  const workers: Worker[] = [];
  const timers: ReturnType<typeof setInterval>[] = [];

  // This process's calls already added to rpc_calls; reports run one at a time, so none counts twice.
  let reportedRpcCalls: Record<string, number> = {};
  let rpcReport: Promise<void> | undefined;
  function reportRpcCalls(): Promise<void> {
    // After the previous report, failed or not: a failed one leaves its calls for the next.
    const previous = (rpcReport ?? Promise.resolve()).catch(() => {});
    rpcReport = previous.then(async () => {
      const now = await metrics.rpcCalls();
      const added: Record<string, number> = {};
      for (const [method, calls] of Object.entries(now)) {
        added[method] = calls - (reportedRpcCalls[method] ?? 0);
      }
      await store.addRpcCalls(added);
      reportedRpcCalls = now;
    });
    return rpcReport;
  }

  /**
   * Records the failure where `status` and /readyz see it, then fails the job: fatal errors
   * stop its retries, the rest retry with the job's backoff.
   */
  const fail = async (role: IndexerRole, error: unknown, started: number): Promise<never> => {
    const summary = errorSummary(error);
    if (isConnectionFailure(error)) databaseOutages.error(error);
    if (isTransientRpcFailure(error)) rpcOutages.error(error);
    metrics.jobFinished(role, (performance.now() - started) / 1000, {
      error: true,
      fatal: isFatal(error),
    });
    await store
      .recordHealth(role, { ok: false, error: summary, fatal: isFatal(error) })
      .catch(() => {});
    if (isFatal(error)) throw new UnrecoverableError(summary);
    const retryable = new Error(summary);
    retryable.name = error instanceof Error ? error.name : "Error";
    throw retryable;
  };

  async function processChunk(job: Job<ChunkJobData>) {
    const from = BigInt(job.data.from);
    const to = BigInt(job.data.to);
    const started = performance.now();
    try {
      const result = await indexRange(deps, { from, to, replace: job.data.replace });
      await store.recordHealth("chunks", { ok: true });
      databaseOutages.recovered();
      rpcOutages.recovered();
      metrics.jobFinished("chunks", (performance.now() - started) / 1000, result);
      log.info(
        {
          job: job.id,
          from: job.data.from,
          to: job.data.to,
          events: result.events,
          indexedBlock: result.indexedBlock.toString(),
          ms: Math.round(performance.now() - started),
        },
        "chunk indexed",
      );
      return { events: result.events };
    } catch (error) {
      // The mark is what parks the chunk; without it the reconciler would queue it again.
      if (isFatal(error)) await markUnrecoverable(job, errorSummary(error)).catch(() => {});
      return fail("chunks", error, started);
    }
  }

  /** The follower's last failure, logged once until it changes or the follower recovers. */
  let followFailure: string | undefined;

  async function processFollow() {
    const started = performance.now();
    try {
      const result = await followTick(deps, followSettings);
      await store.recordHealth("follow", { ok: true });
      databaseOutages.recovered();
      rpcOutages.recovered();
      metrics.jobFinished("follow", (performance.now() - started) / 1000, {
        events: result.action === "indexed" ? result.events : 0,
      });
      if (result.action === "indexed" && result.more)
        await queueTick(`next-${result.indexedBlock}`);
      if (followFailure !== undefined) {
        log.info({ after: followFailure }, "the follower recovered");
        followFailure = undefined;
      }
      if (result.action === "indexed" && result.events > 0) {
        log.info(
          { indexedBlock: result.indexedBlock.toString(), events: result.events },
          "followed the head",
        );
      }
      return { action: result.action };
    } catch (error) {
      const summary = errorSummary(error);
      const outage = isConnectionFailure(error) || isTransientRpcFailure(error);
      if (summary !== followFailure && !outage) {
        followFailure = summary;
        log.warn({ err: summary, fatal: isFatal(error) }, "the follower is failing");
      }
      return fail("follow", error, started);
    }
  }

  let stopWatchingHeads: (() => Promise<void>) | undefined;

  /** A follow tick now, besides the scheduled ones; the id makes it once across processes. */
  const queueTick = (jobId: string) =>
    queues.follow.add("tick", {}, { jobId, removeOnComplete: true, removeOnFail: 50 });

  /**
   * Subscribes to new heads (eth_subscribe over WebSocket) and queues a follow tick for each at
   * once, instead of waiting for the next scheduled one. The job id names the block, so the
   * follower processes on every host queue it once; the scheduled ticks stay as the fallback
   * (a dropped socket, an HTTP-only node).
   */
  function watchHeads(wsUrl: string) {
    const heads = createPublicClient({ transport: webSocket(wsUrl, { reconnect: true }) });
    let socketFailure: string | undefined;
    // On a WebSocket transport viem subscribes to newHeads rather than polling.
    const unwatch = heads.watchBlockNumber({
      onBlockNumber: (blockNumber) => {
        socketFailure = undefined;
        queueTick(`head-${blockNumber}`).catch((error) =>
          log.warn({ err: errorSummary(error) }, "could not queue a head tick"),
        );
      },
      onError: (error) => {
        const summary = errorSummary(error);
        if (summary === socketFailure) return;
        socketFailure = summary;
        log.warn({ err: summary }, "new-head subscription failed (RPC_WS_URL); polling meanwhile");
      },
    });
    return async () => {
      unwatch();
      const socket = await heads.transport.getRpcClient().catch(() => undefined);
      socket?.close();
    };
  }

  /** Idempotent: re-run periodically so a Redis that lost its data gets the scheduler back. */
  async function ensureFollowScheduler() {
    await queues.follow.upsertJobScheduler(
      FOLLOW_SCHEDULER_ID,
      { every: options.followIntervalMs },
      { name: "tick", opts: { removeOnComplete: true, removeOnFail: 50 } },
    );
  }

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

    /**
     * Queues chunk jobs for [from, to]: from defaults to just past the checkpoint (or
     * `startBlock` on a fresh database), to to the finality boundary. Blocks above the boundary
     * belong to the follower, which indexes them block by block.
     */
    async enqueueBackfill(range: { from?: bigint; to?: bigint; startBlock: bigint }) {
      const existing = await store.checkpoint();
      const from = range.from ?? (existing ? existing.indexedBlock + 1n : range.startBlock);
      const { finalized } = await readChainTip(client, finalityDepth);
      if (range.to !== undefined && range.to > finalized) {
        throw new RangeAboveFinality(
          `--to ${range.to} is above the finality boundary ${finalized}; blocks above it are indexed by \`follow\`, block by block`,
        );
      }
      const checkpoint = await store.ensureCheckpoint(contracts.staker, chainId, from);
      if (from > checkpoint.indexedBlock + 1n) {
        throw new BackfillLeavesGap(
          `--from ${from} would leave blocks ${checkpoint.indexedBlock + 1n}..${from - 1n} unindexed; start at or below ${checkpoint.indexedBlock + 1n}`,
        );
      }
      const to = range.to ?? finalized;
      const chunks =
        to >= from ? await enqueueRange(queues.chunks, from, to, options.chunkSize) : 0;
      await store.raiseScheduled(to);
      return { from, to, chunks };
    },

    /**
     * Reads the metadata of every citizen with a recorded read failure again, at the head, and
     * keeps what now reads (the served name and image change with it).
     */
    retryReadFailures: () => metadata.retryFailures(),

    /**
     * Reads the Hand flag of every stake whose flag was inferred from the node's call trace,
     * once the node offers one, and writes what the stake applied. `still` counts those the
     * node still cannot trace.
     */
    async settleInferredHandClaims() {
      const inferred = await store.inferredHandClaims();
      let settled = 0;
      for (const stake of inferred) {
        const flag = await settleInferredHandFlag(client, contracts.staker, {
          ...stake,
          transactionHash: stake.transactionHash as Hex,
        });
        if (flag === undefined) break;
        if (await store.settleHandClaim(stake, flag)) settled++;
      }
      return { settled, still: inferred.length - settled };
    },

    /**
     * Reads every citizen's metadata again at the head, many to an eth_call, and keeps what
     * changed (a recorded failure that now reads is cleared); a tokenURI that does not read at
     * the head keeps what is stored and is counted.
     */
    refreshMetadata: (progress?: (done: number) => void) => metadata.refreshAll(progress),

    /** Re-queues lost work once (what every worker process does every few seconds). */
    reconcile: () => requeueLostRanges(deps, options.chunkSize),

    /** Runs chunk workers and, with `follow`, the head follower. */
    async start({ follow }: { follow: boolean }) {
      const connection = redis;
      workers.push(
        new Worker<ChunkJobData>(QUEUE.chunks, processChunk, {
          connection,
          prefix: options.queuePrefix,
          concurrency: options.concurrency,
          lockDuration: options.jobLockMs ?? 30_000,
          stalledInterval: options.jobLockMs ?? 30_000,
          maxStalledCount: MAX_STALLED_COUNT,
        }),
      );
      timers.push(
        setInterval(() => {
          reportRpcCalls().catch((error) => {
            // An outage is reported once elsewhere; its calls wait for the next report.
            if (isConnectionFailure(error)) return;
            log.warn({ err: errorSummary(error) }, "could not record this process's RPC calls");
          });
        }, RPC_REPORT_INTERVAL_MS),
      );
      timers.push(
        setInterval(() => {
          requeueLostRanges(deps, options.chunkSize).catch((error) =>
            log.warn({ err: errorSummary(error) }, "could not check for lost chunk jobs"),
          );
        }, RECONCILE_INTERVAL_MS),
      );
      if (follow) {
        await ensureFollowScheduler();
        if (options.wsUrl) stopWatchingHeads = watchHeads(options.wsUrl);
        timers.push(
          setInterval(() => {
            ensureFollowScheduler().catch((error) =>
              log.warn({ err: errorSummary(error) }, "could not refresh the follow scheduler"),
            );
          }, FOLLOW_SCHEDULER_REFRESH_MS),
        );
        workers.push(
          new Worker(QUEUE.follow, processFollow, {
            connection,
            prefix: options.queuePrefix,
            concurrency: 1,
          }),
        );
        await metadata.start();
        redisOutages.watch(...metadata.watched());
      }
      for (const worker of workers) {
        // A failing follower fails every tick: processFollow logs each failure once instead.
        if (worker.name === QUEUE.chunks) {
          worker.on("failed", (job, error) => {
            if (databaseOutages.down() || rpcOutages.down()) return;
            log.warn({ job: job?.id, queue: worker.name, err: error.message }, "job failed");
          });
        }
        redisOutages.watch(worker);
      }
    },

    /** Stops taking work, lets running jobs finish, and closes every connection. */
    async close() {
      for (const timer of timers.splice(0)) clearInterval(timer);
      await stopWatchingHeads?.();
      const hadWorkers = workers.length > 0;
      await Promise.all([...workers.map((worker) => worker.close()), metadata.close()]);
      if (hadWorkers) {
        await reportRpcCalls().catch((error) =>
          log.warn({ err: errorSummary(error) }, "could not record this process's RPC calls"),
        );
      }
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

function readOnlyQueues(connection: ReturnType<typeof redisConnection>, prefix: string): Queues {
  const settings = { connection, prefix, skipMetasUpdate: true };
  const chunks = new Queue<ChunkJobData>(QUEUE.chunks, settings);
  const follow = new Queue(QUEUE.follow, settings);
  return { chunks, follow, close: () => Promise.all([chunks.close(), follow.close()]) };
}

export type Indexer = Awaited<ReturnType<typeof createIndexer>>;
