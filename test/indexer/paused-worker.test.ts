/**
 * A worker paused while it holds a chunk (SIGSTOP, a VM frozen, a long GC) comes back to find
 * its job lock lapsed: the chunk went back to the queue and its writes are idempotent. That is
 * one warning naming the job, never "REDIS_URL: unexpected error", which blames Redis.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chunkJobId } from "../../indexer/queues/queues.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

/** JOB_LOCK_MS of the worker: its lock lapses this long into the pause. */
const LOCK_MS = 1_000;

let devnet: ScenarioDevnet;
let proxy: ReturnType<typeof startRpcFaultProxy>;
let harness: TestIndexer;

beforeAll(async () => {
  devnet = await startScenarioDevnet({ events: 20, seed: "paused-worker" });
  proxy = startRpcFaultProxy({ upstream: devnet.node.rpcUrl, faultRate: 0, holdMs: 0 });
  harness = await startTestIndexer({
    label: "paused-worker",
    rpcUrl: proxy.url,
    staker: devnet.deployment.addresses.staker,
    // One chunk: the worker's getLogs is that chunk's.
    options: { chunkSize: 100_000, jobLockMs: LOCK_MS },
  });
});

afterAll(async () => {
  proxy?.releaseHeld();
  await harness?.cleanup();
  proxy?.stop();
  await devnet?.stop();
});

test("a worker paused past its job lock says once that it lost the job, and blames nothing", async () => {
  const head = await devnet.client.getBlockNumber();
  await harness.indexer.enqueueBackfill({ startBlock: devnet.deployment.deployBlock, to: head });
  proxy.holdMethods(["eth_getLogs"]);
  const worker = startCommand(
    ["scripts/cli.ts", "worker"],
    harness.cliEnv({ JOB_LOCK_MS: String(LOCK_MS), CONCURRENCY: "1", LOG_LEVEL: "info" }),
  );
  try {
    await worker.waitForLine(/worker taking chunk jobs/, 60_000);
    const deadline = Date.now() + 60_000;
    while (proxy.held() === 0 && Date.now() < deadline) await Bun.sleep(25);
    expect(proxy.held()).toBeGreaterThan(0);
    worker.child.kill("SIGSTOP");
    // The lock lapses while the process is stopped; the chunk is the queue's again.
    await Bun.sleep(3 * LOCK_MS);
    worker.child.kill("SIGCONT");
    proxy.releaseHeld();
    await worker.waitForLine(/lost its lock on a job/, LOADED_MACHINE_MS);
    // Whatever else it says about that job, said by now.
    await Bun.sleep(2 * LOCK_MS);
  } finally {
    worker.child.kill("SIGCONT");
    expect(await worker.stop()).toBe(0);
  }
  const entries = worker.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(entries.filter((entry) => /unexpected error/.test(String(entry.msg)))).toEqual([]);
  expect(entries.filter((entry) => entry.level === "error")).toEqual([]);
  const lost = entries.filter((entry) => /lost its lock on a job/.test(String(entry.msg)));
  expect(lost.length).toBe(1);
  expect(lost[0]?.job).toBe(chunkJobId(devnet.deployment.deployBlock, head));
}, 180_000);
