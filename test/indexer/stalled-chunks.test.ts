/**
 * A worker that dies while it holds a chunk (kill -9: an OOM kill, a node drained) is no failure
 * of the chunk: however often that happens, the chunk is taken again and written, and the
 * checkpoint reaches the head with no operator. Each worker here hangs in eth_getLogs (a proxy
 * holds the answer) until it is killed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chunkJobId, enqueueRange, MAX_STALLED_COUNT } from "../../indexer/queues/queues.ts";
import { RECONCILE_INTERVAL_MS } from "../../indexer/reconciler/reconciler.ts";
import { startCommand } from "../support/commands.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

/** JOB_LOCK_MS of the workers: a dead worker's chunk is back in the queue about this late. */
const LOCK_MS = 1_000;
/**
 * How long a new worker may take to hold the dead one's chunk: its start (a Bun process and the
 * start-up checks), two stall checks (BullMQ marks an active job, then moves it if its lock is
 * gone), and once MAX_STALLED_COUNT deaths in a row failed the job, a reconciler's round.
 */
const RETAKE_MS = 20_000 + 3 * LOCK_MS + RECONCILE_INTERVAL_MS;

describe("a chunk whose worker dies is retried, however often", () => {
  let devnet: ScenarioChain;
  let proxy: ReturnType<typeof startRpcFaultProxy>;
  const harnesses: TestIndexer[] = [];

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 60, seed: "stalled-chunks" });
    proxy = startRpcFaultProxy({ upstream: devnet.node.rpcUrl, faultRate: 0, holdMs: 0 });
  });

  afterAll(async () => {
    proxy?.releaseHeld();
    for (const harness of harnesses) await harness.cleanup();
    proxy?.stop();
    await devnet?.stop();
  });

  const harnessFor = async (label: string) => {
    const harness = await startTestIndexer({
      label,
      rpcUrl: proxy.url,
      staker: devnet.deployment.addresses.staker,
      // One chunk: every getLogs a worker makes is that chunk's.
      options: { chunkSize: 100_000, jobLockMs: LOCK_MS },
    });
    harnesses.push(harness);
    return harness;
  };

  /** Waits until `worker` hangs in the chunk's getLogs (a request held beyond `before`). */
  const untilHolding = async (
    worker: ReturnType<typeof startCommand>,
    before: number,
    which: string,
  ) => {
    const deadline = Date.now() + RETAKE_MS;
    while (proxy.held() === before) {
      if (Date.now() > deadline || worker.child.exitCode !== null) {
        worker.child.kill("SIGKILL");
        throw new Error(
          `${which} never asked for the chunk's logs; output:\n${worker.lines.join("\n")}`,
        );
      }
      await Bun.sleep(25);
    }
  };

  /**
   * Kills (-9) `kills` workers in a row, each once it hangs in the chunk's getLogs, and returns
   * the worker that takes the chunk after the last kill, running. Each successor starts before
   * its predecessor dies, as other workers are up in a deployment: its start overlaps the wait
   * for the dead worker's lock to lapse, and only the chunk's return can hand it the chunk.
   */
  const killWorkersHoldingTheChunk = async (
    env: Record<string, string>,
    kills: number,
    command: "worker" | "follow" = "worker",
  ) => {
    proxy.holdMethods(["eth_getLogs"]);
    let worker = startCommand(["scripts/cli.ts", command], env);
    await untilHolding(worker, proxy.held(), "worker 1");
    for (let kill = 1; kill <= kills; kill++) {
      const successor = startCommand(["scripts/cli.ts", command], env);
      const before = proxy.held();
      worker.child.kill("SIGKILL");
      await worker.child.exited;
      worker = successor;
      // The last successor completes the chunk: it is released below, whenever it asks.
      if (kill < kills) await untilHolding(worker, before, `worker ${kill + 1}`);
    }
    proxy.releaseHeld();
    return worker;
  };

  /** Runs `last` (or one more worker) until `done`, with no operator; fails naming the failed jobs. */
  const lastWorkerUntil = async (
    harness: TestIndexer,
    env: Record<string, string>,
    done: () => Promise<boolean>,
    command: "worker" | "follow" = "worker",
    last = startCommand(["scripts/cli.ts", command], env),
  ) => {
    try {
      const deadline = Date.now() + RETAKE_MS + 30_000;
      while (!(await done())) {
        if (Date.now() > deadline || last.child.exitCode !== null) {
          const checkpoint = await harness.indexer.store.checkpoint();
          const failed = await harness.indexer.queues.chunks.getFailed();
          throw new Error(
            `indexed block ${checkpoint?.indexedBlock}; failed jobs: ${failed.map((job) => `${job.id} ${job.failedReason}`).join("; ")}`,
          );
        }
        await Bun.sleep(50);
      }
    } finally {
      await last.stop();
    }
  };

  const killedWhileHolding = async (kills: number, command: "worker" | "follow" = "worker") => {
    const harness = await harnessFor(`stalled-${command}-${kills}`);
    const head = await devnet.client.getBlockNumber();
    await harness.indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock, to: head });
    const env = harness.cliEnv({ JOB_LOCK_MS: String(LOCK_MS), CONCURRENCY: "1" });
    const last = await killWorkersHoldingTheChunk(env, kills, command);
    await lastWorkerUntil(
      harness,
      env,
      async () => (await harness.indexer.store.checkpoint())?.indexedBlock === head,
      command,
      last,
    );
    expect(await harness.mismatches()).toEqual([]);
  };

  // Killed five times: its first MAX_STALLED_COUNT deaths BullMQ's stall check recovers (the
  // third worker must be handed the chunk to hang in its getLogs), then it fails, the reconciler
  // queues it again, and it is killed twice more before a worker completes it.
  test(`killed five times (more than MAX_STALLED_COUNT ${MAX_STALLED_COUNT} in a row), it still completes`, async () => {
    await killedWhileHolding(5);
  }, 300_000);

  test("under `follow` (chunk workers and the follower, which stops on parked chunks), killed three times, it completes", async () => {
    await killedWhileHolding(MAX_STALLED_COUNT + 1, "follow");
  }, 300_000);

  test("a reindex chunk killed three times (past the stall limit) is done with no operator", async () => {
    const harness = await harnessFor("stalled-reindex");
    const head = await devnet.client.getBlockNumber();
    const from = devnet.deployment.deployBlock;
    await harness.indexer.enqueueBackfill({ startBlock: from, to: head });
    const env = harness.cliEnv({ JOB_LOCK_MS: String(LOCK_MS), CONCURRENCY: "1" });
    await lastWorkerUntil(
      harness,
      env,
      async () => (await harness.indexer.store.checkpoint())?.indexedBlock === head,
    );
    const requestedAt = Date.now();
    await enqueueRange(harness.indexer.queues.chunks, from, head, 100_000, true, requestedAt);
    const id = chunkJobId(from, head, true, requestedAt);
    const last = await killWorkersHoldingTheChunk(env, MAX_STALLED_COUNT + 1);
    await lastWorkerUntil(
      harness,
      env,
      async () =>
        ["unknown", "completed"].includes(await harness.indexer.queues.chunks.getJobState(id)),
      "worker",
      last,
    );
    expect(await harness.mismatches()).toEqual([]);
  }, 300_000);
});
