/**
 * Chunk workers on three hosts (network namespaces on one bridge, made here) share a backfill.
 * One host's cable is unplugged mid-backfill: the others go on, the chunks it held come back to
 * them once its job locks lapse, and the tables end equal to the chain's. Plugged back, the cut
 * worker goes on taking work without a restart, and nothing is written twice.
 *
 * The services sit on the bridge's address: a Postgres of the test's own listens there (so the
 * server sees the hosts' own connections, and a cut one goes silent as on a real network); the
 * shared Redis and the devnet node are forwarded to it. Needs root (`ip netns`): run by
 * scripts/fleet-test.sh, not by `bun test`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Job } from "bullmq";
import postgres from "postgres";
import { neoTokyoStakerAbi } from "../../contracts/generated/index.ts";
import { SILENT_SESSION_MS } from "../../db/client.ts";
import { startProcess } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { type PrivatePostgres, startPrivatePostgres } from "../support/private-postgres.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";
import { startTestHosts, type TestHost, type TestHosts } from "../support/test-hosts.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

const REPO_ROOT = join(import.meta.dir, "..", "..");
const HOSTS = 3;
/** JOB_LOCK_MS of the workers; their stall checks run as often (chunk-workers.ts). */
const LOCK_MS = 2_000;
/** One block a chunk: many chunks, so every host holds some when the cable is pulled. */
const CHUNK_SIZE = 1;
/** A loaded machine's delay to timers and round trips (no process starts in it). */
const ALLOWANCE_MS = LOADED_MACHINE_MS / 3;
/**
 * From the cut to every chunk the cut host held being back in the queue (or taken by another
 * host): its locks lapse
 * (at most LOCK_MS after their last renewal, before the cut), a stall check marks them and the
 * next moves them back to the queue (one every LOCK_MS each).
 */
const RETURN_BOUND_MS = LOCK_MS + 2 * LOCK_MS + ALLOWANCE_MS;
/**
 * To those chunks written: a transaction the cut host left open holds locks the writes need
 * until Postgres ends its silent session, then a chunk's own work on a loaded machine.
 */
const WRITTEN_BOUND_MS = RETURN_BOUND_MS + SILENT_SESSION_MS + LOADED_MACHINE_MS;

/** What the server logs as it ends a session whose client went silent. */
const SESSION_ENDED =
  /idle-in-transaction timeout|connection to client lost|could not receive data from client/;

/**
 * From the cable plugged back to the cut worker writing chunks again: its requests stuck in the
 * cut end as its connections hear back (TCP retransmits within the time the cable was out, and
 * postgres.js's keepalive, 60 s, ends a query whose server session is gone), then it takes jobs.
 */
const RECOVERY_BOUND_MS = 60_000 + LOADED_MACHINE_MS;
/** Cuts tried before one lands while the cut host holds the writers' lock. */
const MAX_CUTS = 20;

type Worker = ReturnType<typeof startProcess> & { host: TestHost };

const STAKER_EVENTS = neoTokyoStakerAbi.filter(
  (item) => item.type === "event" && ["Stake", "Withdraw", "Claim"].includes(item.name),
);

describe("workers on three hosts, one host's network cut mid-backfill", () => {
  let devnet: ScenarioDevnet;
  let lan: TestHosts | undefined;
  let server: PrivatePostgres | undefined;
  const proxies: Awaited<ReturnType<typeof startTcpProxy>>[] = [];
  let harness: TestIndexer | undefined;
  let sql: ReturnType<typeof postgres> | undefined;
  const workers: Worker[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 3_000, seed: "worker-hosts" });
    lan = await startTestHosts(HOSTS);
    server = await startPrivatePostgres({ listen: [lan.serviceAddress] });
    const database = await server.createDatabase(`cs_hosts_${process.pid}`);
    harness = await startTestIndexer({
      label: "hosts",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      database,
      options: { chunkSize: CHUNK_SIZE, jobLockMs: LOCK_MS },
    });
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
    for (const port of [6379, devnet.node.port]) {
      proxies.push(await startTcpProxy({ host: "127.0.0.1", port }, lan.serviceAddress));
    }
  });

  afterAll(async () => {
    // Every step runs whatever the one before did: the hosts must go in any case.
    const steps: Array<() => Promise<unknown> | undefined> = [
      async () => {
        for (const worker of workers) {
          worker.child.kill("SIGKILL");
          await worker.child.exited;
        }
      },
      () => lan?.remove(),
      () => sql?.end({ timeout: 5 }),
      () => harness?.cleanup(),
      () => Promise.all(proxies.map((proxy) => proxy.stop())),
      () => server?.stop(),
      () => devnet?.stop(),
    ];
    for (const step of steps) await Promise.resolve().then(step).catch(console.error);
  });

  /** A worker on `host`, reaching every service at the bridge's address. */
  const startWorker = async (host: TestHost) => {
    const [redis, node] = proxies;
    const env = harness!.cliEnv({
      DATABASE_URL: server!.primary.url(`cs_hosts_${process.pid}`, lan!.serviceAddress),
      REDIS_URL: redis!.route(harness!.redis.url),
      RPC_URL: node!.route(devnet.node.rpcUrl),
      CONCURRENCY: "2",
      JOB_LOCK_MS: String(LOCK_MS),
      LOG_LEVEL: "info",
    });
    const started = startProcess(host.exec([process.execPath, "scripts/cli.ts", "worker"]), {
      cwd: REPO_ROOT,
      env,
    });
    const worker = Object.assign(started, { host });
    workers.push(worker);
    await worker.waitForLine(/worker taking chunk jobs/, 2 * LOADED_MACHINE_MS);
    return worker;
  };

  /** Jobs name the process that took them: `citizen-staking-<hostname>-<pid>`. */
  const heldBy = (host: TestHost, job: Job | undefined) =>
    job?.processedBy?.startsWith(`citizen-staking-${host.name}-`) ?? false;

  /** Whether a session of `host` holds the writers' advisory lock (indexer/store) now. */
  const holdsWritersLock = async (host: TestHost) => {
    const rows = await sql!`select 1 from pg_locks join pg_stat_activity using (pid)
      where locktype = 'advisory' and granted and client_addr = ${host.address}::inet`;
    return rows.length > 0;
  };

  const storedEvents = async () =>
    (await sql!`select count(*)::int as n from staker_events`)[0]!.n as number;

  test("the others go on, the cut host's chunks come back to them, and it recovers when plugged back", async () => {
    const hosts = lan!.hosts;
    const cutHost = hosts[1]!;
    const queue = harness!.indexer.queues.chunks;
    const checkpoint = async () => (await harness!.indexer.store.checkpoint())!.indexedBlock;
    const running = await Promise.all(hosts.map(startWorker));
    const cutWorker = running[1]!;
    const head = await devnet.client.getBlockNumber();
    const { from } = await harness!.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
      to: head,
    });

    // Mid-backfill, the worst moment: the cut host holds chunks and the writers' lock, which
    // every other host's next checkpoint move waits for. A cut that misses it (the write ended
    // before the cable was out) is undone at once and tried again.
    let attempts = 0;
    let cutAt = 0;
    let lockHeld = false;
    const deadline = Date.now() + 2 * LOADED_MACHINE_MS;
    for (;;) {
      const holdsChunks = (await queue.getActive()).some((job) => heldBy(cutHost, job));
      const midBackfill = (await checkpoint()) > from + (head - from) / 5n;
      if (!holdsChunks || !midBackfill || !(await holdsWritersLock(cutHost))) {
        if (Date.now() > deadline) throw new Error("the cut host never held the writers' lock");
        await Bun.sleep(2);
        continue;
      }
      await cutHost.cut();
      cutAt = performance.now();
      attempts++;
      lockHeld = await holdsWritersLock(cutHost);
      if (lockHeld || attempts === MAX_CUTS) break;
      await cutHost.restore();
      await Bun.sleep(200);
    }
    // What it still holds once cut: it can neither finish nor give these back.
    const held = (await queue.getActive()).filter((job) => heldBy(cutHost, job));
    const waitingAtCut = await queue.getWaitingCount();
    expect(held.length).toBeGreaterThan(0);

    const returnedAt = new Map<string, number>();
    while (returnedAt.size < held.length && performance.now() - cutAt < 2 * RETURN_BOUND_MS) {
      for (const job of held) {
        if (returnedAt.has(job.id!)) continue;
        const [now, state] = await Promise.all([queue.getJob(job.id!), queue.getJobState(job.id!)]);
        // Back in the queue, or already taken by another host's worker.
        if (state !== "active" || !heldBy(cutHost, now)) {
          returnedAt.set(job.id!, performance.now() - cutAt);
        }
      }
      await Bun.sleep(20);
    }
    const returnMs = Math.max(...returnedAt.values());
    const lastHeld = held.reduce((top, job) => {
      const to = BigInt(job.data.to);
      return to > top ? to : top;
    }, 0n);
    while ((await checkpoint()) < lastHeld && performance.now() - cutAt < 2 * WRITTEN_BOUND_MS) {
      await Bun.sleep(20);
    }
    const writtenMs = performance.now() - cutAt;
    console.log(
      `worker-hosts: ${cutHost.name} cut (attempt ${attempts}) holding ${held.length} chunks${lockHeld ? " and the writers' lock" : ""}, ${waitingAtCut} chunks waiting; its chunks back in the queue after ${Math.round(returnMs)} ms (bound ${RETURN_BOUND_MS} ms: JOB_LOCK_MS ${LOCK_MS} + two stall checks + ${ALLOWANCE_MS} for a loaded machine), written by the others after ${Math.round(writtenMs)} ms (bound ${WRITTEN_BOUND_MS} ms)`,
    );
    expect(returnedAt.size).toBe(held.length);
    expect(returnMs).toBeLessThan(RETURN_BOUND_MS);
    expect(writtenMs).toBeLessThan(WRITTEN_BOUND_MS);

    // The other two hosts finish the backfill with the cut host still away.
    await harness!.waitForBlock(head, 4 * LOADED_MACHINE_MS);
    expect(await harness!.mismatches()).toEqual([]);
    expect(cutWorker.child.exitCode).toBeNull();

    // Plugged back: the cut worker takes new work without a restart, and nothing is doubled.
    await cutHost.restore();
    const restoredAt = performance.now();
    const linesAtRestore = cutWorker.lines.length;
    const indexedSinceRestore = () =>
      cutWorker.lines.slice(linesAtRestore).filter((line) => line.includes('"chunk indexed"'))
        .length;
    let newHead = head;
    while (indexedSinceRestore() === 0 && performance.now() - restoredAt < RECOVERY_BOUND_MS) {
      await devnet.scenario.run({ events: 200 });
      newHead = await devnet.client.getBlockNumber();
      await harness!.indexer.enqueueBackfill({
        startBlock: devnet.deployment.deployBlock,
        to: newHead,
      });
      await harness!.waitForBlock(newHead, 4 * LOADED_MACHINE_MS);
    }
    const recoveredMs = performance.now() - restoredAt;
    console.log(
      `worker-hosts: plugged back, ${cutHost.name} indexed a chunk again within ${Math.round(recoveredMs)} ms (${indexedSinceRestore()} chunks; bound ${RECOVERY_BOUND_MS} ms)`,
    );
    expect(indexedSinceRestore()).toBeGreaterThan(0);
    expect(cutWorker.child.exitCode).toBeNull();

    expect(await harness!.mismatches()).toEqual([]);
    const verify = await harness!.cli(["verify"]);
    expect(verify.stdout).toContain(" 0 mismatches");
    expect(verify.code).toBe(0);
    const onChain = await devnet.client.getLogs({
      address: devnet.deployment.addresses.staker,
      events: STAKER_EVENTS,
      fromBlock: devnet.deployment.deployBlock,
      toBlock: newHead,
    });
    expect(await storedEvents()).toBe(onChain.length);
    const ended = server!.primary.lines().filter((line) => SESSION_ENDED.test(line));
    console.log(`worker-hosts: Postgres ended ${ended.length} silent sessions of the cut host`);
    if (lockHeld) expect(ended.length).toBeGreaterThan(0);
    for (const worker of running) expect(await worker.stop()).toBe(0);
  }, 600_000);
});
