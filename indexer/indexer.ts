import { type Job, Queue, UnrecoverableError, Worker } from "bullmq";
import type { Address } from "viem";
import { createDatabase } from "../db/client.ts";
import { CheckpointMismatch, createIndexerStore } from "../db/indexer-store.ts";
import { errorSummary, logger } from "../lib/log.ts";
import { createOutageReporter } from "../lib/outages.ts";
import { createChainClient } from "./chain/client.ts";
import { discoverContracts } from "./chain/contracts.ts";
import { LogRangeGovernor } from "./chain/logs.ts";
import { followTick } from "./jobs/follow.ts";
import { indexRange } from "./jobs/index-range.ts";
import {
  type ChunkJobData,
  createQueues,
  enqueueRange,
  FOLLOW_SCHEDULER_ID,
  QUEUE,
  type Queues,
  redisConnection,
} from "./jobs/queues.ts";
import { ReorgTooDeep } from "./reorg/fork-point.ts";

export interface IndexerOptions {
  rpcUrl: string;
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  staker: Address;
  /** Checked against the node when given. */
  chainId?: number;
  chunkSize: number;
  concurrency: number;
  confirmations: number;
  followIntervalMs: number;
  maxLogRange: number;
  /** A killed worker's chunk returns to the queue about this long after it died. */
  jobLockMs?: number;
  /** Blocks a follow tick indexes itself before it hands the range to chunk jobs. */
  inlineBlocks?: number;
  rpcTimeoutMs?: number;
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

/** Errors no retry can fix: the job fails at once and says why. */
const FATAL = [CheckpointMismatch, ReorgTooDeep, ChainMismatch];

/**
 * Builds one indexer process: the chain client, the store, the queues, and (on `start`) the
 * workers. Everything it keeps is in Postgres and Redis, so any number of these can run.
 */
export async function createIndexer(options: IndexerOptions) {
  const log = logger("indexer");
  const client = createChainClient(options.rpcUrl, { timeoutMs: options.rpcTimeoutMs });
  const chainId = await client.getChainId();
  if (options.chainId !== undefined && options.chainId !== chainId) {
    throw new ChainMismatch(
      `CHAIN_ID is ${options.chainId} but the node at RPC_URL serves chain ${chainId}`,
    );
  }
  const contracts = await discoverContracts(client, options.staker);
  const database = createDatabase(options.databaseUrl, { max: options.concurrency + 2 });
  const store = createIndexerStore(database.db);
  const redis = redisConnection(options.redisUrl);
  const queues = options.readOnly
    ? readOnlyQueues(redis, options.queuePrefix)
    : createQueues(redis, options.queuePrefix);
  // One warning per Redis outage, not a line (or, without a listener, a stack) per retry.
  const redisOutages = createOutageReporter("REDIS_URL", log);
  redisOutages.watch(queues.chunks, queues.follow);
  redis.on("ready", () => redisOutages.recovered());
  const governor = new LogRangeGovernor(options.maxLogRange);
  const deps = { client, store, contracts, governor, queues, log };
  const followSettings = {
    chunkSize: options.chunkSize,
    confirmations: options.confirmations,
    inlineBlocks: options.inlineBlocks ?? 64,
  };
  const workers: Worker[] = [];
  let schedulerTimer: ReturnType<typeof setInterval> | undefined;

  /** Fatal errors stop the job's retries; the rest retry with the job's backoff. */
  const failFatal = (error: unknown) => {
    if (FATAL.some((kind) => error instanceof kind)) {
      throw new UnrecoverableError(errorSummary(error));
    }
    const retryable = new Error(errorSummary(error));
    retryable.name = error instanceof Error ? error.name : "Error";
    throw retryable;
  };

  async function processChunk(job: Job<ChunkJobData>) {
    const from = BigInt(job.data.from);
    const to = BigInt(job.data.to);
    const started = performance.now();
    try {
      const result = await indexRange(deps, { from, to, replace: job.data.replace });
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
      return failFatal(error);
    }
  }

  async function processFollow() {
    try {
      const result = await followTick(deps, followSettings);
      if (result.action === "indexed" && result.events > 0) {
        log.info(
          { indexedBlock: result.indexedBlock.toString(), events: result.events },
          "followed the head",
        );
      }
      return { action: result.action };
    } catch (error) {
      return failFatal(error);
    }
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

    /** Creates the checkpoint on a fresh database: indexing starts at `startBlock`. */
    ensureCheckpoint: (startBlock: bigint) =>
      store.ensureCheckpoint(contracts.staker, chainId, startBlock),

    /**
     * Queues chunk jobs for [from, to]: from defaults to just past the checkpoint (or
     * `startBlock` on a fresh database), to to the head less the confirmations.
     */
    async enqueueBackfill(range: { from?: bigint; to?: bigint; startBlock: bigint }) {
      const existing = await store.checkpoint();
      const from = range.from ?? (existing ? existing.indexedBlock + 1n : range.startBlock);
      const checkpoint = await store.ensureCheckpoint(contracts.staker, chainId, from);
      if (from > checkpoint.indexedBlock + 1n) {
        throw new BackfillLeavesGap(
          `--from ${from} would leave blocks ${checkpoint.indexedBlock + 1n}..${from - 1n} unindexed; start at or below ${checkpoint.indexedBlock + 1n}`,
        );
      }
      const to = range.to ?? (await client.getBlockNumber()) - BigInt(options.confirmations);
      const chunks =
        to >= from ? await enqueueRange(queues.chunks, from, to, options.chunkSize) : 0;
      await store.raiseScheduled(to);
      return { from, to, chunks };
    },

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
        }),
      );
      if (follow) {
        await ensureFollowScheduler();
        schedulerTimer = setInterval(() => {
          ensureFollowScheduler().catch((error) =>
            log.warn({ err: errorSummary(error) }, "could not refresh the follow scheduler"),
          );
        }, 10_000);
        workers.push(
          new Worker(QUEUE.follow, processFollow, {
            connection,
            prefix: options.queuePrefix,
            concurrency: 1,
          }),
        );
      }
      for (const worker of workers) {
        worker.on("failed", (job, error) =>
          log.warn({ job: job?.id, queue: worker.name, err: error.message }, "job failed"),
        );
        redisOutages.watch(worker);
      }
    },

    /** Stops taking work, lets running jobs finish, and closes every connection. */
    async close() {
      if (schedulerTimer) clearInterval(schedulerTimer);
      await Promise.all(workers.map((worker) => worker.close()));
      await queues.close();
      redis.disconnect();
      await database.close();
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
