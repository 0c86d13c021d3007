/**
 * `verify` does not take our tables' word for which wallets to check: a stake missing from the
 * tables altogether is found through the citizens' transfers into the staker's escrow. And on a
 * live system it reads the chain and the tables at one block the tables had reached, below the
 * node's head, so a citizen withdrawn and staked again while it runs is no false alarm.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Address } from "viem";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { stakingActions } from "../support/staking.ts";

const LONER: Address = "0x000000000000000000000000000000000000a101";
const LONER_CITIZEN = 71_001n;
const MOVER: Address = "0x000000000000000000000000000000000000a102";
const MOVER_CITIZENS = [71_101n, 71_102n, 71_103n, 71_104n, 71_105n];
const DAY = 86_400;
const RUNS = 10;
const LATE_RUNS = 6;

let devnet: ScenarioDevnet;
let actions: ReturnType<typeof stakingActions>;
const harnesses: TestIndexer[] = [];

beforeAll(async () => {
  devnet = await startScenarioDevnet({ events: 60, seed: "verify" });
  actions = stakingActions(devnet.client, devnet.deployment);
  await actions.wallet(LONER);
  await actions.wallet(MOVER);
  await actions.mine([
    actions.mintS1(LONER, LONER_CITIZEN),
    ...MOVER_CITIZENS.map((id) => actions.mintS1(MOVER, id)),
  ]);
  await actions.mine([
    actions.stake(LONER, 1, LONER_CITIZEN),
    ...MOVER_CITIZENS.map((id) => actions.stake(MOVER, 1, id)),
  ]);
});

afterAll(async () => {
  for (const harness of harnesses) await harness.cleanup();
  await devnet?.stop();
});

describe("verify", () => {
  test("a stake missing from the tables altogether is a mismatch, exit 1", async () => {
    const harness = await indexDevnet(devnet, {
      label: "verify_missing",
      to: await devnet.client.getBlockNumber(),
    });
    harnesses.push(harness);
    const clean = await harness.cli(["verify"]);
    expect(clean.stdout).toContain(": 0 mismatches");
    expect(clean.code).toBe(0);

    // As if its log had never been received: the wallet's only stake leaves no trace in the tables.
    const { db } = harness.indexer.database;
    await db.execute(sql`delete from staker_events where account = ${LONER.toLowerCase()}`);
    await db.execute(sql`delete from staked_citizens where staker = ${LONER.toLowerCase()}`);

    // And a served row that no longer is what the rule projects.
    await db.execute(
      sql`update staked_citizens set total_points = total_points + 1 where citizen_id = ${MOVER_CITIZENS[0]!}`,
    );

    // And a stored record, served as it is, that is not what its row's columns make (the
    // trigger keeps a record changed on its own).
    await db.execute(
      sql`update staked_citizens set record = replace(record, '"totalPoints":', '"totalPoints":1') where citizen_id = ${MOVER_CITIZENS[1]!}`,
    );

    const damaged = await harness.cli(["verify"]);
    expect(damaged.stdout).toContain(
      `${MOVER.toLowerCase()} s1 #${MOVER_CITIZENS[1]} record: tables stored record differs`,
    );
    expect(damaged.stdout).toContain(
      `${MOVER.toLowerCase()} s1 #${MOVER_CITIZENS[0]} projection: tables total_points differ`,
    );
    expect(damaged.stdout).toContain(
      `${LONER.toLowerCase()} s1 #${LONER_CITIZEN} staked: tables absent, chain staked`,
    );
    expect(damaged.stdout).not.toContain(": 0 mismatches");
    expect(damaged.code).toBe(1);
  });

  /**
   * Runs `verify` `runs` times while MOVER's citizens are withdrawn and staked again in
   * consecutive blocks under a running follower, each block mined `pauseMs` after the follower
   * holds the one before; returns every run that did not exit 0.
   */
  const verifyWhileMoving = async (
    harness: TestIndexer,
    runs: number,
    { env = {}, pauseMs = 0 }: { env?: Record<string, string>; pauseMs?: number } = {},
  ) => {
    let moving = true;
    let cycles = 0;
    // Each block is mined once the follower holds the one before: a read at the head while the
    // node mines the next block can answer from that next block's state (issue 19's reads
    // pinned to their block), which would write a wrong row that verify rightly reports.
    const activity = (async () => {
      while (moving) {
        await devnet.client.increaseTime({ seconds: 31 * DAY });
        await actions.mine(MOVER_CITIZENS.map((id) => actions.withdraw(MOVER, 1, id)));
        await harness.waitForHead();
        await Bun.sleep(pauseMs);
        await actions.mine(MOVER_CITIZENS.map((id) => actions.stake(MOVER, 1, id)));
        await harness.waitForHead();
        await Bun.sleep(pauseMs);
        cycles++;
      }
    })();
    const outcomes: string[] = [];
    try {
      for (let run = 0; run < runs; run++) {
        const result = await harness.cli(["verify"], env);
        outcomes.push(`exit ${result.code}: ${result.stdout.trim()}${result.stderr.trim()}`);
      }
    } finally {
      moving = false;
      await activity;
    }
    // The citizens moved throughout the runs, not only before them.
    expect(cycles).toBeGreaterThan(runs / 2);
    return outcomes.filter((outcome) => !outcome.startsWith("exit 0"));
  };

  test(`withdrawn and staked again in consecutive blocks under a running follower: ${RUNS} runs, no false mismatch`, async () => {
    const harness = await indexDevnet(devnet, {
      label: "verify_live",
      follow: true,
      options: { followIntervalMs: 20 },
    });
    harnesses.push(harness);
    expect(await verifyWhileMoving(harness, RUNS)).toEqual([]);
    await harness.waitForHead();
    expect(await harness.mismatches()).toEqual([]);
  });

  test(`a node that answers reads at its head from the block it mines next: ${LATE_RUNS} runs, no false mismatch`, async () => {
    const harness = await indexDevnet(devnet, {
      label: "verify_late",
      follow: true,
      options: { followIntervalMs: 20 },
    });
    harnesses.push(harness);
    // verify's node holds every read at its head until the next block is mined and answers it
    // from that block's state, as anvil does when the read comes while it mines (by number and
    // by hash alike); a block stays the head for a second, so verify's reads meet the head. The
    // race a loaded machine opens now and then, opened every time.
    const node = startLyingNode(devnet.node.rpcUrl);
    node.answerHeadReadsLate();
    try {
      const failures = await verifyWhileMoving(harness, LATE_RUNS, {
        env: { RPC_URL: node.url },
        pauseMs: 1_000,
      });
      expect(failures).toEqual([]);
      // verify asked the chain below its head, never at it.
      expect(node.counts.lateHeadReads).toBe(0);
    } finally {
      node.stop();
    }
  });
});
