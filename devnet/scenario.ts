/**
 * A seeded, repeatable scenario of Neo Tokyo staking on the devnet: many wallets stake S1 citizens
 * (every vault case, Hands with and without the claim), S2 citizens, BYTES into both, withdraw after
 * time travel, hand withdrawn citizens to other wallets who stake them again, and add LP and Claim
 * noise. The same seed and size give the same transactions, blocks and timestamps.
 *
 * This file drives it: it mines the setup (scenario-setup.ts), then produces blocks, each planned
 * by scenario-actions.ts against the model of who holds what (scenario-holdings.ts). Every
 * transaction sent is valid by that model; a revert means the model and the contracts disagree,
 * and the run stops with the transaction's label.
 */
import { parseEther } from "viem";
import { BlockBuilder } from "./block-builder.ts";
import { type DevnetConnection, devnetClient } from "./client.ts";
import type { DevnetDeployment } from "./deploy.ts";
import { SeededRandom } from "./random.ts";
import { planBlock } from "./scenario-actions.ts";
import { ScenarioHoldings, type Wallet } from "./scenario-holdings.ts";
import { LP_PER_WALLET, planSetup } from "./scenario-setup.ts";
import { DAY } from "./settings.ts";

export type ScenarioOptions = {
  seed?: string;
  /** Stop once at least this many staker events (Stake, Withdraw, Claim) were emitted. */
  events: number;
  /** Wallets taking part; defaults to one per 50 events (at least 4). */
  wallets?: number;
  /** Transactions per block while the scenario runs; defaults so a run spans at least 30 blocks. */
  transactionsPerBlock?: number;
  onBlock?: (progress: ScenarioProgress) => void;
};

export type ScenarioProgress = {
  block: bigint;
  blocks: number;
  transactions: number;
  stakerEvents: number;
  targetEvents: number;
};

export type LiveOptions = {
  /** Wall-clock pause between blocks. */
  intervalMs: number;
  transactionsPerBlock?: number;
  /** Chain time between blocks; a day by default so timelocks expire during a test. */
  secondsPerBlock?: bigint;
  signal: AbortSignal;
  onBlock?: (progress: ScenarioProgress) => void;
};

const SETUP_PER_BLOCK = 1_000;
/** Chain time the whole scenario spans, so that most timelocks expire before it ends. */
const SCENARIO_SPAN = 1_100n * DAY;

export class Scenario {
  private readonly holdings = new ScenarioHoldings();
  private readonly builder: BlockBuilder;
  private readonly random: SeededRandom;
  private now = 0n;
  private blockIndex = 0;
  private blocks = 0;
  private transactions = 0;
  stakerEvents = 0;

  private constructor(
    private readonly connection: DevnetConnection,
    private readonly deployment: DevnetDeployment,
    private readonly seed: string,
  ) {
    this.builder = new BlockBuilder(devnetClient(connection), deployment.addresses.staker);
    this.random = new SeededRandom(seed);
  }

  /** Funds the wallets and mints their citizens, vaults, BYTES and LP; emits no staker events. */
  static async prepare(
    connection: DevnetConnection,
    deployment: DevnetDeployment,
    options: { seed?: string; wallets: number; lpPerWallet?: bigint },
  ): Promise<Scenario> {
    const scenario = new Scenario(connection, deployment, options.seed ?? "citizen-staking");
    await scenario.setUp(options.wallets, options.lpPerWallet ?? LP_PER_WALLET);
    return scenario;
  }

  get wallets(): readonly Wallet[] {
    return this.holdings.wallets;
  }

  get citizensStaked(): number {
    return this.holdings.citizensStaked;
  }

  private get client() {
    return devnetClient(this.connection);
  }

  private async setUp(walletCount: number, lpPerWallet: bigint): Promise<void> {
    await this.builder.start();
    const latest = await this.client.getBlock({ blockTag: "latest" });
    this.now = latest.timestamp;
    const setup = planSetup(
      {
        seed: this.seed,
        random: this.random,
        deployment: this.deployment,
        walletCount,
        lpPerWallet,
      },
      this.holdings,
    );
    for (const wallet of this.holdings.wallets) {
      await this.client.setBalance({ address: wallet.address, value: parseEther("1000") });
    }
    for (let start = 0; start < setup.length; start += SETUP_PER_BLOCK) {
      for (const transaction of setup.slice(start, start + SETUP_PER_BLOCK))
        this.builder.add(transaction);
      this.now += 1n;
      await this.mineAtNow();
    }
  }

  private async mineAtNow() {
    const mined = await this.builder.mine(this.now);
    this.blockIndex++;
    return mined;
  }

  private async produceBlock(
    count: number,
    seconds: bigint,
  ): Promise<ScenarioProgress & { mined: bigint }> {
    // The block's timestamp is fixed first, so withdrawals are planned against the time they run at.
    this.now += seconds;
    planBlock(
      {
        holdings: this.holdings,
        random: this.random,
        addresses: this.deployment.addresses,
        now: this.now,
        blockIndex: this.blockIndex,
        send: (transaction) => this.builder.add(transaction),
      },
      count,
    );
    const mined = await this.mineAtNow();
    this.blocks++;
    this.transactions += mined.transactions;
    this.stakerEvents += mined.watchedLogs;
    return { ...this.progress(mined.number, 0), mined: mined.number };
  }

  private progress(block: bigint, targetEvents: number): ScenarioProgress {
    return {
      block,
      blocks: this.blocks,
      transactions: this.transactions,
      stakerEvents: this.stakerEvents,
      targetEvents,
    };
  }

  /** Produces blocks until at least `events` staker events were emitted in this scenario. */
  async run(options: Pick<ScenarioOptions, "events" | "transactionsPerBlock" | "onBlock">) {
    const { perBlock, blocks } = scenarioBlocks(options.events, options.transactionsPerBlock);
    const step = SCENARIO_SPAN / BigInt(blocks);
    const target = this.stakerEvents + options.events;
    let last = 0n;
    while (this.stakerEvents < target) {
      const seconds = step / 2n + this.random.bigintUpTo(step);
      const wanted = Math.min(perBlock, Math.ceil((target - this.stakerEvents) / 1.9));
      const produced = await this.produceBlock(wanted, seconds);
      last = produced.mined;
      options.onBlock?.(this.progress(last, target));
    }
    return this.progress(last, target);
  }

  /** Keeps producing a few transactions per block until the signal aborts. */
  async live(options: LiveOptions): Promise<void> {
    const perBlock = options.transactionsPerBlock ?? 3;
    const seconds = options.secondsPerBlock ?? DAY;
    while (!options.signal.aborted) {
      const started = performance.now();
      const produced = await this.produceBlock(perBlock, seconds);
      options.onBlock?.(this.progress(produced.mined, 0));
      const wait = options.intervalMs - (performance.now() - started);
      if (wait > 0) await Bun.sleep(wait);
    }
  }
}

/**
 * How a run of `events` staker events is laid out: transactions per block and the blocks it is
 * expected to span (at least 30; a stake or withdraw logs two events, Claim first, a claim one).
 */
export function scenarioBlocks(events: number, transactionsPerBlock?: number) {
  const roughTransactions = Math.ceil(events / 1.9);
  const perBlock =
    transactionsPerBlock ?? Math.max(1, Math.min(500, Math.ceil(roughTransactions / 30)));
  return { perBlock, blocks: Math.max(30, Math.ceil(roughTransactions / perBlock)) };
}
