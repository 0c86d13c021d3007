import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { type Address, parseEther } from "viem";
import { neoTokyoStakerAbi } from "../../contracts/generated/index.ts";
import { SeededRandom } from "../../devnet/random.ts";
import { DAY } from "../../devnet/settings.ts";
import { bunArgv } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { stakingActions, type TransactionJson } from "../support/staking.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";

const SEED = process.env.CHAOS_SEED ?? "chaos-1";
const ROUNDS = 16;
/** Reorgs go up to 20 blocks deep; the boundary sits right below them, where chunks meet blocks. */
const FINALITY_DEPTH = 20;
const WALLETS: Address[] = Array.from(
  { length: 4 },
  (_, i) => `0x00000000000000000000000000000000000c4a0${i}` as Address,
);

/**
 * A seeded run of everything a real chain and a careless night can do at once: live staking,
 * reorgs of 1-12 blocks and of 20 (after activity, after quiet stretches, across the chunk/follower
 * seam), kill -9 of the follower and of workers, Redis losing its keys, Postgres dropping every
 * connection. It ends with `verify` clean and every stored event on the chain, with no manual
 * step. Replay a failure with CHAOS_SEED.
 */
describe(`chaos (seed ${SEED})`, () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer;
  let postgres: Awaited<ReturnType<typeof startTcpProxy>>;
  let actions: ReturnType<typeof stakingActions>;
  const random = new SeededRandom(SEED);
  const processes = new Map<string, Subprocess>();
  let nextId = 70_000n;

  const env = () =>
    harness.cliEnv({
      DATABASE_URL: postgres.route(harness.database.url),
      CONCURRENCY: "2",
      CHUNK_SIZE: "5",
      JOB_LOCK_MS: "1000",
      FOLLOW_INTERVAL_MS: "50",
      FINALITY_DEPTH: String(FINALITY_DEPTH),
    });
  const spawn = (name: string, command: string) => {
    const args = command === "follow" ? ["follow", "--no-migrate"] : [command];
    processes.set(
      name,
      Bun.spawn(bunArgv(["scripts/cli.ts", ...args]), {
        env: env(),
        stdout: "ignore",
        stderr: "inherit",
      }),
    );
  };
  const kill = async (name: string) => {
    const child = processes.get(name);
    child?.kill("SIGKILL");
    await child?.exited;
    processes.delete(name);
  };

  /**
   * The indexer has seen the chain so far: before a burst of blocks, and after an outage (which
   * it must get over alone). A reorg still unseen when 40-150 blocks, or the blocks mined while
   * the follower is blind for seconds (a reconnect), bury it below FINALITY_DEPTH is, by that
   * rule, one only an operator may undo (ReorgTooDeep); the run asserts nothing else needs one.
   */
  const seenSoFar = () => harness.waitForHead(60_000);

  /** One block of staking decided from what the chain says now, so reorgs cannot confuse it. */
  const stakingBlock = async () => {
    const transactions: TransactionJson[] = [];
    for (const wallet of WALLETS) {
      if (!random.chance(0.6)) continue;
      const positions = await devnet.client.readContract({
        address: devnet.deployment.addresses.staker,
        abi: neoTokyoStakerAbi,
        functionName: "getStakerPositions",
        args: [wallet],
      });
      const staked = positions.stakedS1Citizens;
      const now = (await devnet.client.getBlock()).timestamp;
      const roll = random.next();
      if (roll < 0.5 || staked.length === 0) {
        const id = nextId++;
        transactions.push(actions.mintS1(wallet, id), actions.stake(wallet, 1, id));
      } else if (roll < 0.8) {
        const citizen = staked[random.int(0, staked.length - 1)]!;
        if (citizen.stakedBytes + parseEther("10") <= parseEther("200")) {
          const amount = parseEther(String(random.int(1, 10))) + BigInt(random.int(0, 999));
          transactions.push(actions.stakeBytes(wallet, 1, citizen.citizenId, amount));
        }
      } else {
        const ready = staked.filter((citizen) => citizen.timelockEndTime <= now);
        if (ready[0]) transactions.push(actions.withdraw(wallet, 1, ready[0].citizenId));
      }
    }
    await actions.mine(transactions);
  };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 300, seed: "chaos" });
    actions = stakingActions(devnet.client, devnet.deployment);
    for (const wallet of WALLETS) await actions.wallet(wallet);
    // Past the deepest reorg the run makes, so none can take the wallets' funds and approvals.
    await devnet.client.mine({ blocks: FINALITY_DEPTH + 1 });
    harness = await startTestIndexer({
      label: "chaos",
      rpcUrl: devnet.node.rpcUrl,
      staker: devnet.deployment.addresses.staker,
      options: { finalityDepth: FINALITY_DEPTH, chunkSize: 5 },
    });
    postgres = await startTcpProxy({ host: "127.0.0.1", port: 5432 });
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
  });

  afterAll(async () => {
    for (const name of [...processes.keys()]) await kill(name);
    await harness?.cleanup();
    await postgres?.stop();
    await devnet?.stop();
  });

  test("ends with the tables equal to the staker's views, with no manual step", async () => {
    spawn("follower", "follow");
    spawn("worker-1", "worker");
    spawn("worker-2", "worker");
    const log: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const blocks = random.int(2, 6);
      for (let i = 0; i < blocks; i++) await stakingBlock();
      if (random.chance(0.3)) {
        await devnet.client.increaseTime({ seconds: Number(31n * DAY) });
        await actions.mine([]);
      }
      const event = random.int(0, 6);
      switch (event) {
        case 0: {
          // Slack below FINALITY_DEPTH: the next rounds mine blocks before the follower may
          // have seen the reorg, and each pushes the replaced blocks deeper.
          const depth = random.int(1, FINALITY_DEPTH - 8);
          log.push(`reorg ${depth}`);
          await actions.reorg(depth);
          break;
        }
        case 1: {
          await seenSoFar();
          const quiet = random.int(40, 150);
          await devnet.client.mine({ blocks: quiet });
          const depth = random.int(1, 5);
          log.push(`quiet ${quiet}, then reorg ${depth}`);
          await actions.reorg(depth);
          break;
        }
        case 2: {
          log.push("kill -9 the follower, 150 blocks pass, start it again, reorg at the seam");
          await seenSoFar();
          await kill("follower");
          await devnet.client.mine({ blocks: 150 });
          await stakingBlock();
          spawn("follower", "follow");
          // It catches up through chunk jobs to the boundary, then block by block; the reorg
          // then replaces every block above the boundary, down to the seam.
          await harness.waitForHead(60_000);
          await actions.reorg(FINALITY_DEPTH);
          // It reaches the boundary itself: one more block before the follower sees it would
          // make it too deep by the rule.
          await seenSoFar();
          break;
        }
        case 3: {
          const name = random.chance(0.5) ? "worker-1" : "worker-2";
          log.push(`kill -9 ${name}`);
          await kill(name);
          spawn(name, "worker");
          break;
        }
        case 4:
          log.push("Redis loses every key");
          await harness.redis.clean();
          await seenSoFar();
          break;
        case 5:
          log.push("Postgres drops every connection for 1.5 s");
          postgres.cut();
          await Bun.sleep(1_500);
          postgres.restore();
          await seenSoFar();
          break;
        default:
          log.push("quiet");
          await Bun.sleep(200);
      }
      await Bun.sleep(random.int(50, 400));
    }
    await stakingBlock();
    console.log(`chaos (${SEED}): ${log.join("; ")}`);

    await harness.waitForHead(90_000);
    const verify = await harness.cli(["verify"], { DATABASE_URL: harness.database.url });
    expect(verify.stdout).toContain(" 0 mismatches");
    expect(verify.code).toBe(0);
    // Every stored event sits in a block that is on the chain now.
    const stored = await harness.indexer.store.eventBlocks(await devnet.client.getBlockNumber());
    for (const block of stored) {
      const onChain = await devnet.client.getBlock({ blockNumber: block.number });
      expect(`${block.number} ${onChain.hash}`).toBe(`${block.number} ${block.hash}`);
    }
    const health = await harness.indexer.store.health();
    expect(health.filter((row) => row.fatal)).toEqual([]);
  }, 180_000);
});
