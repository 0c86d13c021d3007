/**
 * Two `follow` processes on one database and queue: one leads (holds the follower lease and runs
 * the ticks), the other stands by running chunk workers. Killed with SIGKILL, the leader is
 * replaced within the lease's time to live, not JOB_LOCK_MS: the tick it died in holds nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import type { Job } from "bullmq";
import { startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startDevnetIndexer, type TestIndexer } from "../support/indexer.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

/** FOLLOW_LEASE_MS of the follow processes (the default). */
const LEASE_MS = 2_000;
/** A standby asks for the lease four times per lease period. */
const ROUND_MS = LEASE_MS / 4;
/** JOB_LOCK_MS (the default): a follower that waited out the dead tick's lock would take this. */
const JOB_LOCK_MS = 30_000;
/** A block with staking in it every this often. */
const BLOCK_MS = 300;
/**
 * A loaded machine's delay to timers and a few round trips (no process starts here): a third
 * of what a process start may take, and well below JOB_LOCK_MS.
 */
const ALLOWANCE_MS = LOADED_MACHINE_MS / 3;
/**
 * From the kill to a block past the head at the kill indexed: the dead leader's lease lapses
 * (at most LEASE_MS after its last renewal, which came before the kill), the standby's next
 * round takes it, the next block is mined, and the new leader's first tick (queued as it takes
 * the lead) writes it.
 */
const TAKEOVER_BOUND_MS = LEASE_MS + ROUND_MS + BLOCK_MS + ALLOWANCE_MS;

type FollowProcess = ReturnType<typeof startCommand> & { metricsPort: () => Promise<number> };

describe("a standby follow process takes over from a killed leader", () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer;
  const live = new AbortController();
  let staking: Promise<void>;
  const processes: FollowProcess[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 200, seed: "standby-follow" });
    harness = await startDevnetIndexer(devnet, "standby");
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    staking = devnet.scenario.live({
      intervalMs: BLOCK_MS,
      transactionsPerBlock: 2,
      signal: live.signal,
    });
  });

  afterAll(async () => {
    live.abort();
    await staking?.catch(() => {});
    for (const each of processes) {
      each.child.kill("SIGKILL");
      await each.child.exited;
    }
    await harness?.cleanup();
    await devnet?.stop();
  });

  const startFollow = (): FollowProcess => {
    const env = harness.cliEnv({
      FOLLOW_LEASE_MS: String(LEASE_MS),
      JOB_LOCK_MS: String(JOB_LOCK_MS),
      CONCURRENCY: "2",
      METRICS_PORT: "0",
      LOG_LEVEL: "info",
    });
    const started = startCommand(["scripts/cli.ts", "follow", "--no-migrate"], env);
    const each = Object.assign(started, {
      async metricsPort() {
        const line = await started.waitForLine(/serving metrics at \/metrics/);
        return (JSON.parse(line) as { port: number }).port;
      },
    });
    processes.push(each);
    return each;
  };

  /** This process's metrics: follow ticks it ran, and whether it says it leads. */
  const metricsOf = async (each: FollowProcess) => {
    const port = await each.metricsPort();
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const ticks = [
      ...text.matchAll(/^citizen_staking_job_duration_seconds_count\{queue="follow".*\} (\d+)$/gm),
    ].reduce((sum, match) => sum + Number(match[1]), 0);
    const leading = /^citizen_staking_follow_leading (\d+)$/m.exec(text)?.[1];
    return { ticks, leading: Number(leading) };
  };

  /** Waits until one of `running` leads and every other one stands by; returns the leader. */
  const leaderAmong = async (running: FollowProcess[]) => {
    const deadline = Date.now() + LOADED_MACHINE_MS;
    for (;;) {
      const { leader, standbys } = await harness.indexer.followLease();
      const leading = running.find((each) => each.child.pid === leader?.pid);
      const standing = standbys.map((member) => member.pid).sort();
      const others = running.filter((each) => each !== leading).map((each) => each.child.pid);
      if (leading && JSON.stringify(standing) === JSON.stringify(others.sort())) return leading;
      if (Date.now() > deadline) {
        throw new Error(
          `no single leader among ${running.map((each) => each.child.pid)}: ${JSON.stringify({ leader, standbys })}`,
        );
      }
      await Bun.sleep(50);
    }
  };

  /**
   * Kills the leader with SIGKILL, if it can while a tick of its own runs (the worst case: that
   * tick's job stays active, locked, for JOB_LOCK_MS), and measures until a block past the head
   * at the kill is indexed.
   */
  const killLeader = async (leader: FollowProcess) => {
    const name = `citizen-staking-${hostname()}-${leader.child.pid}`;
    const deadline = Date.now() + 5_000;
    let tick: Job | undefined;
    while (!tick && Date.now() < deadline) {
      const active = await harness.indexer.queues.follow.getActive();
      tick = active.find((job) => job.processedBy === name);
      if (!tick) await Bun.sleep(5);
    }
    const headAtKill = await devnet.client.getBlockNumber();
    const killedAt = performance.now();
    leader.child.kill("SIGKILL");
    await leader.child.exited;
    const midTick =
      tick !== undefined &&
      (await harness.indexer.queues.follow.getJobState(tick.id ?? "")) === "active";
    let leaseTakenMs: number | undefined;
    for (;;) {
      if (leaseTakenMs === undefined) {
        const { leader: now } = await harness.indexer.followLease();
        if (now && now.pid !== leader.child.pid) leaseTakenMs = performance.now() - killedAt;
      }
      const checkpoint = await harness.indexer.store.checkpoint();
      if (checkpoint && checkpoint.indexedBlock > headAtKill) break;
      if (performance.now() - killedAt > 2 * TAKEOVER_BOUND_MS) break;
      await Bun.sleep(10);
    }
    const takeoverMs = performance.now() - killedAt;
    return { takeoverMs, leaseTakenMs, midTick, headAtKill };
  };

  test("kill -9 of the leader: the standby leads and indexes the next block within the lease bound, nothing lost", async () => {
    const first = startFollow();
    const second = startFollow();
    let leader = await leaderAmong([first, second]);
    let standby = leader === first ? second : first;
    await harness.waitForHead(LOADED_MACHINE_MS);

    // Only the leader follows: the standby has run no tick while the leader lives.
    expect(await metricsOf(leader)).toMatchObject({ leading: 1, ticks: expect.any(Number) });
    expect((await metricsOf(leader)).ticks).toBeGreaterThan(0);
    expect(await metricsOf(standby)).toEqual({ leading: 0, ticks: 0 });
    const status = await harness.cli(["status"]);
    expect(status.stdout).toMatch(
      new RegExp(
        `leading follower +\\S+ pid ${leader.child.pid} .*standing by: \\S+ pid ${standby.child.pid}`,
      ),
    );

    const takeovers: Awaited<ReturnType<typeof killLeader>>[] = [];
    for (let round = 0; round < 2; round++) {
      const taken = await killLeader(leader);
      takeovers.push(taken);
      console.log(
        `standby-follow: kill -9 of the leader ${taken.midTick ? "mid-tick" : "between ticks"} at head ${taken.headAtKill}: lease taken after ${Math.round(taken.leaseTakenMs ?? Number.NaN)} ms, the next block indexed after ${Math.round(taken.takeoverMs)} ms (bound ${TAKEOVER_BOUND_MS} ms: FOLLOW_LEASE_MS ${LEASE_MS} + a standby round ${ROUND_MS} + a block ${BLOCK_MS} + ${ALLOWANCE_MS} for a loaded machine; JOB_LOCK_MS ${JOB_LOCK_MS})`,
      );
      expect(taken.takeoverMs).toBeLessThan(TAKEOVER_BOUND_MS);
      const survivor = standby;
      expect((await leaderAmong([survivor])).child.pid).toBe(survivor.child.pid);
      const survivorMetrics = await metricsOf(survivor);
      expect(survivorMetrics.leading).toBe(1);
      expect(survivorMetrics.ticks).toBeGreaterThan(0);
      // A new standby for the next round.
      const fresh = startFollow();
      leader = await leaderAmong([survivor, fresh]);
      standby = fresh;
      expect(leader).toBe(survivor);
    }

    live.abort();
    await staking;
    await harness.waitForHead(LOADED_MACHINE_MS);
    expect(await harness.mismatches()).toEqual([]);
    const verify = await harness.cli(["verify"]);
    expect(verify.stdout).toContain(" 0 mismatches");
    expect(verify.code).toBe(0);
    const health = await harness.indexer.store.health();
    expect(health.filter((row) => row.fatal)).toEqual([]);
    // A leader stopped with SIGTERM gives the lease up: the standby leads at its next round.
    const stoppedAt = performance.now();
    expect(await leader.stop()).toBe(0);
    expect((await leaderAmong([standby])).child.pid).toBe(standby.child.pid);
    console.log(
      `standby-follow: after a SIGTERM stop the standby led ${Math.round(performance.now() - stoppedAt)} ms after the stop began`,
    );
    expect(await standby.stop()).toBe(0);
  }, 240_000);
});
