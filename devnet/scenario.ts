/**
 * A seeded, repeatable scenario of Neo Tokyo staking on the devnet: many wallets stake S1 citizens
 * (every vault case, Hands with and without the claim), S2 citizens, BYTES into both, withdraw after
 * time travel, hand withdrawn citizens to other wallets who stake them again, and add LP and Claim
 * noise. The same seed and size give the same transactions, blocks and timestamps.
 *
 * The generator keeps its own model of who holds what, so every transaction it sends is valid; a
 * revert means the model and the contracts disagree, and the run stops with the transaction's label.
 */
import { type Address, encodeFunctionData, keccak256, parseEther, slice, stringToHex } from "viem";
import {
  bytesTokenAbi,
  identityAbi,
  lpTokenAbi,
  s1CitizenAbi,
  s2CitizenAbi,
  vaultAbi,
} from "../contracts/generated/index.ts";
import type { Season } from "../lib/vocabulary.ts";
import { BlockBuilder, type PlannedTransaction } from "./block-builder.ts";
import { type DevnetConnection, devnetClient } from "./client.ts";
import type { DevnetDeployment } from "./deploy.ts";
import { SeededRandom } from "./random.ts";
import {
  BYTES_UNIT,
  citizenRewardRate,
  DAY,
  HAND_CLASS,
  type IdentityKind,
  NO_VAULT_CAP,
  STAKER_ASSET_ID,
  TIMELOCK_OPTIONS,
  VAULT_CAP,
  VAULT_TIERS,
  type VaultTier,
} from "./settings.ts";
import {
  approvalTransactions,
  citizenAssetType,
  stakeCalldata,
  withdrawCalldata,
} from "./staking-calls.ts";

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

type S1Citizen = {
  id: bigint;
  owner: Address;
  identity: IdentityKind;
  componentVault: bigint;
  /** The first block (by index in this run) the owner may act on it: transfers land a block later. */
  usableFromBlock: number;
  stake?: { endTime: bigint; hasVault: boolean; stakedVault: bigint; bytes: bigint };
};

type S2Citizen = {
  id: bigint;
  owner: Address;
  usableFromBlock: number;
  stake?: { endTime: bigint; bytes: bigint };
};

type Wallet = {
  address: Address;
  looseVaults: bigint[];
  /** LP tokens the wallet holds and may still stake; the token refuses a stake past them. */
  lpHeld: bigint;
  lp: { amount: bigint; optionId: number; endTime: bigint };
};

const STAKE_GAS = 1_500_000n;
const SETUP_GAS = 400_000n;
const SETUP_PER_BLOCK = 1_000;
const LP_PER_WALLET = 10_000n * BYTES_UNIT;
const LP_STAKE_MAX = 50n * BYTES_UNIT;
const CLASS_ROWS_PER_TRANSACTION = 100;
/** Chain time the whole scenario spans, so that most timelocks expire before it ends. */
const SCENARIO_SPAN = 1_100n * DAY;
const TIMELOCK_WEIGHTS = { "0": 45, "1": 25, "2": 15, "3": 10, "4": 5 } as const;
const CLASS_NAMES = ["Assassin", "Hacker", "Engineer", "Samurai", "Ronin", "Cyborg"] as const;

/** Keeps ids in an array for uniform picks and a map for O(1) removal. */
class Pool<T> {
  private readonly items: T[] = [];
  private readonly index = new Map<T, number>();

  add(item: T): void {
    if (this.index.has(item)) return;
    this.index.set(item, this.items.length);
    this.items.push(item);
  }

  delete(item: T): void {
    const at = this.index.get(item);
    if (at === undefined) return;
    const last = this.items.pop() as T;
    if (at < this.items.length) {
      this.items[at] = last;
      this.index.set(last, at);
    }
    this.index.delete(item);
  }

  get size(): number {
    return this.items.length;
  }

  pick(random: SeededRandom): T | undefined {
    return this.items.length === 0 ? undefined : random.pick(this.items);
  }
}

export function walletAddress(seed: string, index: number): Address {
  return slice(keccak256(stringToHex(`citizen-staking wallet ${seed} ${index}`)), 12);
}

export class Scenario {
  readonly wallets: Wallet[] = [];
  private readonly walletByAddress = new Map<Address, Wallet>();
  private readonly s1 = new Map<bigint, S1Citizen>();
  private readonly s2 = new Map<bigint, S2Citizen>();
  private readonly unstakedS1 = new Pool<bigint>();
  private readonly stakedS1 = new Pool<bigint>();
  private readonly unstakedS2 = new Pool<bigint>();
  private readonly stakedS2 = new Pool<bigint>();
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

  get citizensStaked(): number {
    return this.stakedS1.size + this.stakedS2.size;
  }

  private get client() {
    return devnetClient(this.connection);
  }

  private async setUp(walletCount: number, lpPerWallet: bigint): Promise<void> {
    const { addresses, deployer } = this.deployment;
    const random = this.random;
    await this.builder.start();
    const latest = await this.client.getBlock({ blockTag: "latest" });
    this.now = latest.timestamp;

    const setup: PlannedTransaction[] = [];
    const fromDeployer = (to: Address, data: `0x${string}`, label: string) =>
      setup.push({ from: deployer, to, data, gas: SETUP_GAS, label });
    let nextS1 = 1n;
    let nextS2 = 1n;
    let nextVault = 1n;
    const hands: bigint[] = [];
    const classes: { id: bigint; name: string }[] = [];
    const mintVault = (to: Address, tier: VaultTier) => {
      const id = nextVault++;
      fromDeployer(
        addresses.vault,
        encodeFunctionData({ abi: vaultAbi, functionName: "mint", args: [to, id, tier] }),
        `mint vault ${id}`,
      );
      return id;
    };

    for (let index = 0; index < walletCount; index++) {
      const address = walletAddress(this.seed, index);
      await this.client.setBalance({ address, value: parseEther("1000") });
      const wallet: Wallet = {
        address,
        looseVaults: [],
        lpHeld: lpPerWallet,
        lp: { amount: 0n, optionId: 0, endTime: 0n },
      };
      this.wallets.push(wallet);
      this.walletByAddress.set(address, wallet);

      for (let n = random.int(1, 6); n > 0; n--) {
        const id = nextS1++;
        const identity = random.weighted({ Low: 40, Mid: 30, High: 20, Hand: 10 });
        const tier: VaultTier | "" = random.chance(0.35) ? random.pick(VAULT_TIERS) : "";
        const componentVault = tier === "" ? 0n : mintVault(deployer, tier);
        // A few citizens carry a rate the credit-yield table does not map: they stake with "" and 0.
        const rate =
          tier === "" && identity === "Low" && random.chance(0.08)
            ? 4n
            : citizenRewardRate(identity, tier);
        if (identity === "Hand") hands.push(id);
        else classes.push({ id, name: random.pick(CLASS_NAMES) });
        fromDeployer(
          addresses.s1Citizen,
          encodeFunctionData({
            abi: s1CitizenAbi,
            functionName: "mint",
            args: [
              address,
              id,
              id,
              componentVault,
              BigInt(random.int(1, 3000)),
              BigInt(random.int(1, 3000)),
              rate,
            ],
          }),
          `mint S1 citizen ${id}`,
        );
        this.s1.set(id, { id, owner: address, identity, componentVault, usableFromBlock: 0 });
        this.unstakedS1.add(id);
      }
      for (let n = random.int(0, 3); n > 0; n--) {
        const id = nextS2++;
        fromDeployer(
          addresses.s2Citizen,
          encodeFunctionData({
            abi: s2CitizenAbi,
            functionName: "mint",
            args: [
              address,
              id,
              100_000n + id,
              BigInt(random.int(1, 3000)),
              BigInt(random.int(1, 3000)),
            ],
          }),
          `mint S2 citizen ${id}`,
        );
        this.s2.set(id, { id, owner: address, usableFromBlock: 0 });
        this.unstakedS2.add(id);
      }
      for (let n = random.int(0, 2); n > 0; n--) {
        wallet.looseVaults.push(mintVault(address, random.pick(VAULT_TIERS)));
      }
      fromDeployer(
        addresses.bytes,
        encodeFunctionData({
          abi: bytesTokenAbi,
          functionName: "mint",
          args: [address, 1_000_000n * BYTES_UNIT],
        }),
        `mint BYTES to ${address}`,
      );
      fromDeployer(
        addresses.lp,
        encodeFunctionData({
          abi: lpTokenAbi,
          functionName: "mint",
          args: [address, lpPerWallet],
        }),
        `mint LP to ${address}`,
      );
      for (const approval of approvalTransactions(addresses, address)) {
        setup.push({ ...approval, gas: SETUP_GAS });
      }
    }
    const classRows = [...hands.map((id) => ({ id, name: HAND_CLASS })), ...classes];
    // Small enough that a setup batch stays under anvil's 2 MiB request limit.
    for (let start = 0; start < classRows.length; start += CLASS_ROWS_PER_TRANSACTION) {
      const rows = classRows.slice(start, start + CLASS_ROWS_PER_TRANSACTION);
      setup.push({
        from: deployer,
        to: addresses.identity,
        data: encodeFunctionData({
          abi: identityAbi,
          functionName: "setClasses",
          args: [rows.map((row) => row.id), rows.map((row) => row.name)],
        }),
        gas: 30_000_000n,
        label: "set identity classes",
      });
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

  private staker(data: `0x${string}`, from: Address, label: string): void {
    this.builder.add({ from, to: this.deployment.addresses.staker, data, gas: STAKE_GAS, label });
  }

  private walletOf(address: Address): Wallet {
    const wallet = this.walletByAddress.get(address);
    if (!wallet) throw new Error(`${address} is not a scenario wallet`);
    return wallet;
  }

  private stakeS1(): boolean {
    const id = this.unstakedS1.pick(this.random);
    const citizen = id === undefined ? undefined : this.s1.get(id);
    if (!citizen || citizen.usableFromBlock > this.blockIndex) return false;
    const random = this.random;
    const wallet = this.walletOf(citizen.owner);
    const optionId = Number(random.weighted(TIMELOCK_WEIGHTS));
    const [duration] = TIMELOCK_OPTIONS[STAKER_ASSET_ID.s1_citizen][optionId] ?? [0n];
    let stakedVault = 0n;
    if (citizen.componentVault === 0n && wallet.looseVaults.length > 0 && random.chance(0.5)) {
      stakedVault = wallet.looseVaults.pop() as bigint;
    }
    // Only 1 is a claim; other values stake silently as no claim, which the indexer must not misread.
    const handClaimant =
      citizen.identity === "Hand"
        ? random.chance(0.7)
          ? 1n
          : random.pick([0n, 2n])
        : random.chance(0.05)
          ? random.pick([2n, 255n])
          : 0n;
    this.staker(
      stakeCalldata(STAKER_ASSET_ID.s1_citizen, optionId, id as bigint, stakedVault, handClaimant),
      citizen.owner,
      `stake S1 ${id}`,
    );
    citizen.stake = {
      endTime: this.now + duration,
      hasVault: citizen.componentVault !== 0n || stakedVault !== 0n,
      stakedVault,
      bytes: 0n,
    };
    this.unstakedS1.delete(citizen.id);
    this.stakedS1.add(citizen.id);
    return true;
  }

  private stakeS2(): boolean {
    const id = this.unstakedS2.pick(this.random);
    const citizen = id === undefined ? undefined : this.s2.get(id);
    if (!citizen || citizen.usableFromBlock > this.blockIndex) return false;
    const optionId = Number(this.random.weighted(TIMELOCK_WEIGHTS));
    const [duration] = TIMELOCK_OPTIONS[STAKER_ASSET_ID.s2_citizen][optionId] ?? [0n];
    this.staker(
      stakeCalldata(STAKER_ASSET_ID.s2_citizen, optionId, citizen.id),
      citizen.owner,
      `stake S2 ${id}`,
    );
    citizen.stake = { endTime: this.now + duration, bytes: 0n };
    this.unstakedS2.delete(citizen.id);
    this.stakedS2.add(citizen.id);
    return true;
  }

  /** A deposit with odd wei so per-deposit truncation of the bonus shows; sometimes up to the cap. */
  private depositAmount(room: bigint): bigint {
    if (room <= 0n) return 0n;
    if (this.random.chance(0.1)) return room;
    const cap = room < 600n * BYTES_UNIT ? room : 600n * BYTES_UNIT;
    return this.random.bigintUpTo(cap);
  }

  private stakeBytes(season: Season): boolean {
    const pool = season === 1 ? this.stakedS1 : this.stakedS2;
    const id = pool.pick(this.random);
    if (id === undefined) return false;
    const citizen = season === 1 ? this.s1.get(id) : this.s2.get(id);
    if (!citizen?.stake) return false;
    const cap = season === 1 && (citizen as S1Citizen).stake?.hasVault ? VAULT_CAP : NO_VAULT_CAP;
    const amount = this.depositAmount(cap - citizen.stake.bytes);
    if (amount === 0n) return false;
    this.staker(
      stakeCalldata(STAKER_ASSET_ID.bytes, 0, amount, id, BigInt(season)),
      citizen.owner,
      `stake ${amount} BYTES wei into S${season} ${id}`,
    );
    citizen.stake.bytes += amount;
    return true;
  }

  private withdraw(season: Season): boolean {
    const pool = season === 1 ? this.stakedS1 : this.stakedS2;
    const id = pool.pick(this.random);
    if (id === undefined) return false;
    const citizen = season === 1 ? this.s1.get(id) : this.s2.get(id);
    if (!citizen?.stake || citizen.stake.endTime > this.now) return false;
    this.staker(
      withdrawCalldata(citizenAssetType(season), id),
      citizen.owner,
      `withdraw S${season} ${id}`,
    );
    const owner = this.walletOf(citizen.owner);
    if (season === 1) {
      const stakedVault = (citizen as S1Citizen).stake?.stakedVault ?? 0n;
      if (stakedVault !== 0n) owner.looseVaults.push(stakedVault);
    }
    citizen.stake = undefined;
    pool.delete(id);
    (season === 1 ? this.unstakedS1 : this.unstakedS2).add(id);

    // Some withdrawn citizens are sold: the new owner can stake them from the next block on.
    if (this.wallets.length > 1 && this.random.chance(0.35)) {
      let buyer = this.random.pick(this.wallets);
      while (buyer.address === citizen.owner) buyer = this.random.pick(this.wallets);
      this.builder.add({
        from: citizen.owner,
        to:
          season === 1 ? this.deployment.addresses.s1Citizen : this.deployment.addresses.s2Citizen,
        data: encodeFunctionData({
          abi: s1CitizenAbi,
          functionName: "transferFrom",
          args: [citizen.owner, buyer.address, id],
        }),
        gas: SETUP_GAS,
        label: `sell S${season} ${id} to ${buyer.address}`,
      });
      citizen.owner = buyer.address;
      citizen.usableFromBlock = this.blockIndex + 1;
    }
    return true;
  }

  private claim(): boolean {
    const caller = this.random.pick(this.wallets);
    const recipient = this.random.pick(this.wallets);
    this.builder.add({
      from: caller.address,
      to: this.deployment.addresses.bytes,
      data: encodeFunctionData({
        abi: bytesTokenAbi,
        functionName: "getReward",
        args: [recipient.address],
      }),
      gas: STAKE_GAS,
      label: `claim for ${recipient.address}`,
    });
    return true;
  }

  private stakeLP(): boolean {
    const wallet = this.random.pick(this.wallets);
    // Every stake restarts the position's timelock, so a wallet that keeps staking never reaches a
    // withdrawal and runs out of LP in a long live run; once it holds none, it waits for the lock.
    if (wallet.lpHeld === 0n) return false;
    // The first LP stake fixes the multiplier until the position is emptied.
    const optionId = wallet.lp.amount > 0n ? wallet.lp.optionId : this.random.int(0, 5);
    const [duration] = TIMELOCK_OPTIONS[STAKER_ASSET_ID.lp][optionId] ?? [0n];
    const amount = this.random.bigintUpTo(
      wallet.lpHeld < LP_STAKE_MAX ? wallet.lpHeld : LP_STAKE_MAX,
    );
    this.staker(
      stakeCalldata(STAKER_ASSET_ID.lp, optionId, amount),
      wallet.address,
      `stake ${amount} LP`,
    );
    wallet.lpHeld -= amount;
    wallet.lp = { amount: wallet.lp.amount + amount, optionId, endTime: this.now + duration };
    return true;
  }

  private withdrawLP(): boolean {
    const wallet = this.random.pick(this.wallets);
    if (wallet.lp.amount === 0n || wallet.lp.endTime > this.now) return false;
    const amount = this.random.chance(0.5)
      ? wallet.lp.amount
      : this.random.bigintUpTo(wallet.lp.amount);
    this.staker(
      withdrawCalldata(STAKER_ASSET_ID.lp, amount),
      wallet.address,
      `withdraw ${amount} LP`,
    );
    wallet.lp.amount -= amount;
    wallet.lpHeld += amount;
    return true;
  }

  private readonly actions: Record<string, () => boolean> = {
    stakeS1: () => this.stakeS1(),
    stakeS2: () => this.stakeS2(),
    bytesS1: () => this.stakeBytes(1),
    bytesS2: () => this.stakeBytes(2),
    withdrawS1: () => this.withdraw(1),
    withdrawS2: () => this.withdraw(2),
    claim: () => this.claim(),
    stakeLP: () => this.stakeLP(),
    withdrawLP: () => this.withdrawLP(),
  };

  private readonly weights = {
    stakeS1: 30,
    stakeS2: 12,
    bytesS1: 15,
    bytesS2: 6,
    withdrawS1: 14,
    withdrawS2: 6,
    claim: 6,
    stakeLP: 3,
    withdrawLP: 2,
  };

  /** Plans up to `count` actions for the next block (fewer when nothing valid is found). */
  private planBlock(count: number): void {
    let misses = 0;
    let planned = 0;
    while (planned < count && misses < count * 20 + 50) {
      const kind = this.random.weighted(this.weights);
      if (this.actions[kind]?.()) planned++;
      else misses++;
    }
  }

  private async produceBlock(
    count: number,
    seconds: bigint,
  ): Promise<ScenarioProgress & { mined: bigint }> {
    // The block's timestamp is fixed first, so withdrawals are planned against the time they run at.
    this.now += seconds;
    this.planBlock(count);
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

/** Prepares wallets sized for `events` and runs the scenario to that many staker events. */
export async function runScenario(
  connection: DevnetConnection,
  deployment: DevnetDeployment,
  options: ScenarioOptions,
): Promise<{ scenario: Scenario; progress: ScenarioProgress }> {
  const scenario = await Scenario.prepare(connection, deployment, {
    seed: options.seed,
    wallets: options.wallets ?? Math.max(4, Math.round(options.events / 50)),
  });
  const progress = await scenario.run(options);
  return { scenario, progress };
}
