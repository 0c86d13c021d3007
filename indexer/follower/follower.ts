/**
 * The follower: a BullMQ job scheduler queues a follow tick every interval (and, with RPC_WS_URL,
 * one per new head), and one worker per process runs them (`followTick`). Takes its
 * dependencies, so it can be built alone.
 */
import type { Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { createPublicClient, webSocket } from "viem";
import { APPLICATION_NAME } from "../../db/client.ts";
import { isConnectionFailure } from "../../lib/connection-checks.ts";
import { errorSummary } from "../../lib/log.ts";
import { isTransientRpcFailure } from "../../lib/rpc-failures.ts";
import { withTimeout } from "../../lib/with-timeout.ts";
import { CitizenReadCache } from "../fetch/citizen-read-cache.ts";
import { createFetchStage, type FetchDeps } from "../fetch/fetch-range.ts";
import { createJobWorker } from "../queues/job-worker.ts";
import { FOLLOW_SCHEDULER_ID, QUEUE } from "../queues/queues.ts";
import { type HealthRecords, isFatal } from "../reports/health.ts";
import { type FollowDeps, type FollowSettings, followTick } from "./follow.ts";

/**
 * How often the follower puts its scheduler back. A Redis that lost its keys loses the
 * scheduled ticks with them, and a follower blind for long lets a shallow reorg sink below the
 * finality depth before it is seen (then only an operator can recover): a second at most.
 */
const FOLLOW_SCHEDULER_REFRESH_MS = 1_000;

/** A follow tick that outlived its limit: the follower went on without it. */
export class FollowTickStuck extends Error {
  override name = "FollowTickStuck";
}

/**
 * How long a follow tick may run before the follower goes on without it: twice the longest one
 * node call may take (its timeout for each of its tries, and viem's backoff between them). A
 * tick awaits its node calls in series, each bounded so, and Postgres, which answers in
 * milliseconds, ends a silent session (db/client.ts) or keeps it for an operator's lock. An
 * answer that never comes would otherwise hold the follow worker (concurrency 1) for good, and
 * the lease round that stops it waits for its tick: in one loaded test run, a tick under way when
 * a proxy cut every socket never ended, and neither did that follower. An abandoned tick's write
 * is still safe if it comes: it extends the checkpoint only from the block it read
 * (CheckpointMoved otherwise). With the defaults (15 s, 7 tries, 100 ms doubling), 223 s.
 */
export function followTickLimitMs(node: {
  timeout?: number;
  retryCount?: number;
  retryDelay?: number;
}): number {
  const tries = (node.retryCount ?? 3) + 1;
  const backoff = (node.retryDelay ?? 150) * (2 ** (tries - 1) - 1);
  return 2 * ((node.timeout ?? 10_000) * tries + backoff);
}

/**
 * Abandoned ticks still waiting, past which no new one starts until one ends: each may hold a
 * Postgres connection (a lock it waits for), and the pool is the process's. Two, so that one tick
 * that never ends does not stop the follower.
 */
const ABANDONED_TICKS_MAX = 2;

export interface FollowerDeps {
  /** The tick's dependencies, and what its own fetch stage is built from. */
  deps: FollowDeps & FetchDeps;
  settings: FollowSettings;
  health: HealthRecords;
  redis: Redis;
  queuePrefix: string;
  intervalMs: number;
  /** The node's WebSocket endpoint: new heads trigger a follow tick the moment they arrive. */
  wsUrl?: string;
  log: Logger;
}

export function createFollower({
  deps,
  settings,
  health,
  redis,
  queuePrefix,
  intervalMs,
  wsUrl,
  log,
}: FollowerDeps) {
  const { queues } = deps;
  const tickLimitMs = followTickLimitMs(deps.client.transport);
  /**
   * The follower reads the citizens it meets through its own in-process cache, without the
   * chunk workers' Redis claims (citizen-claims.ts): those spare several processes reading the
   * same citizen while a backfill's chunks meet it at once, and cost three Redis round trips
   * (look for a published reading, claim, publish) before and after the reads of every head
   * block with a new citizen. Chunk jobs stay at or below the finality boundary, the follower
   * above it, so they rarely meet the same citizen at once; when they do (or two followers'
   * ticks do), it is read twice: the citizens table, not the claim, is the idempotency guard.
   */
  const followDeps: FollowDeps = {
    ...deps,
    fetch: createFetchStage({ ...deps, citizenReads: new CitizenReadCache() }),
  };
  let worker: Worker | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopWatchingHeads: (() => Promise<void>) | undefined;
  /** The follower's last failure, logged once until it changes or the follower recovers. */
  let followFailure: string | undefined;

  /** Ticks that outlived tickLimitMs and still run. */
  let abandoned = 0;

  /** A follow tick, given up past tickLimitMs (see followTickLimitMs). */
  function boundedTick() {
    if (abandoned >= ABANDONED_TICKS_MAX) {
      throw new FollowTickStuck(
        `${abandoned} follow ticks given up after ${tickLimitMs} ms are still waiting (on the node or Postgres): no new one starts until one ends`,
      );
    }
    const tick = followTick(followDeps, settings);
    return withTimeout(tick, tickLimitMs, () => {
      abandoned++;
      tick.catch(() => {}).finally(() => abandoned--);
      return new FollowTickStuck(
        `a follow tick was still waiting after ${tickLimitMs} ms (on the node or Postgres): the follower goes on without it`,
      );
    });
  }

  async function processFollow() {
    const started = performance.now();
    try {
      const result = await boundedTick();
      const indexed = result.action === "indexed" ? result : undefined;
      if (result.action === "waiting") await health.waited("follow", started, result.behind);
      else
        await health.succeeded("follow", started, {
          events: indexed?.events ?? 0,
          logCheck: indexed?.logCheck,
        });
      if (indexed && indexed.logCheck.corrected > 0) {
        log.warn(
          { indexedBlock: indexed.indexedBlock.toString(), blocks: indexed.logCheck.corrected },
          "eth_getLogs left staker logs out of every answer: written from the blocks' receipts",
        );
      }
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
      return health.failed("follow", error, started);
    }
  }

  /** A follow tick now, besides the scheduled ones; the id makes it once across processes. */
  const queueTick = (jobId: string) =>
    queues.follow.add("tick", {}, { jobId, removeOnComplete: true, removeOnFail: 50 });

  /**
   * Subscribes to new heads (eth_subscribe over WebSocket) and queues a follow tick for each at
   * once, instead of waiting for the next scheduled one. The job id names the block, so the
   * follower processes on every host queue it once; the scheduled ticks stay as the fallback
   * (a dropped socket, an HTTP-only node).
   */
  function watchHeads(url: string) {
    const heads = createPublicClient({ transport: webSocket(url, { reconnect: true }) });
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
      { every: intervalMs },
      { name: "tick", opts: { removeOnComplete: true, removeOnFail: 50 } },
    );
  }

  return {
    /**
     * Puts the scheduler in place (and keeps it there), watches new heads and starts the
     * follow worker; returns the worker (for the caller's Redis outage reports).
     */
    async start(): Promise<Worker> {
      await ensureFollowScheduler();
      if (wsUrl) stopWatchingHeads = watchHeads(wsUrl);
      timer = setInterval(() => {
        ensureFollowScheduler().catch((error) =>
          log.warn({ err: errorSummary(error) }, "could not refresh the follow scheduler"),
        );
      }, FOLLOW_SCHEDULER_REFRESH_MS);
      // A failing follower fails every tick: processFollow logs each failure once instead.
      worker = createJobWorker(QUEUE.follow, processFollow, {
        connection: redis,
        prefix: queuePrefix,
        // Each job names the process that took it (processedBy), as its Postgres connections do.
        name: APPLICATION_NAME,
        concurrency: 1,
      });
      return worker;
    },

    /** Queues a tick now: a follower that just took the lead need not wait for the schedule. */
    tickNow: () => queueTick(`now-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`),

    /** Stops the scheduler refresh (before any await) and the head watch, then the worker. */
    async close() {
      clearInterval(timer);
      timer = undefined;
      await stopWatchingHeads?.();
      stopWatchingHeads = undefined;
      await worker?.close();
    },
  };
}
