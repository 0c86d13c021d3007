/**
 * What the scenario does in a block, planned against its holdings: stake S1 and S2 citizens, BYTES
 * into either, withdraw them once their timelock expired (and sometimes sell them on), stake and
 * withdraw LP, and claim. Each planner draws from the seeded random and returns false when the
 * draw finds nothing it may validly do, so the same seed plans the same transactions.
 */
import { encodeFunctionData } from "viem";
import { bytesTokenAbi, s1CitizenAbi } from "../contracts/generated/index.ts";
import type { Season } from "../lib/vocabulary.ts";
import type { PlannedTransaction } from "./block-builder.ts";
import type { DevnetAddresses } from "./deploy.ts";
import type { SeededRandom } from "./random.ts";
import type { S1Citizen, ScenarioHoldings } from "./scenario-holdings.ts";
import {
  BYTES_UNIT,
  NO_VAULT_CAP,
  STAKER_ASSET_ID,
  TIMELOCK_OPTIONS,
  VAULT_CAP,
} from "./settings.ts";
import {
  citizenAssetType,
  STAKER_CALL_GAS,
  stakeCalldata,
  TOKEN_CALL_GAS,
  withdrawCalldata,
} from "./staking-calls.ts";

/** The largest LP stake the scenario draws. */
export const LP_STAKE_MAX = 50n * BYTES_UNIT;
const TIMELOCK_WEIGHTS = { "0": 45, "1": 25, "2": 15, "3": 10, "4": 5 } as const;

export type BlockPlan = {
  holdings: ScenarioHoldings;
  random: SeededRandom;
  addresses: DevnetAddresses;
  /** The timestamp of the block being planned: withdrawals are planned against the time they run at. */
  now: bigint;
  /** The block's index in this run (see `usableFromBlock`). */
  blockIndex: number;
  send(transaction: PlannedTransaction): void;
};

function callStaker(plan: BlockPlan, data: `0x${string}`, from: `0x${string}`, label: string) {
  plan.send({ from, to: plan.addresses.staker, data, gas: STAKER_CALL_GAS, label });
}

function stakeS1(plan: BlockPlan): boolean {
  const { holdings, random } = plan;
  const id = holdings.unstakedS1.pick(random);
  const citizen = id === undefined ? undefined : holdings.s1.get(id);
  if (!citizen || citizen.usableFromBlock > plan.blockIndex) return false;
  const wallet = holdings.walletOf(citizen.owner);
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
  callStaker(
    plan,
    stakeCalldata(STAKER_ASSET_ID.s1_citizen, optionId, citizen.id, stakedVault, handClaimant),
    citizen.owner,
    `stake S1 ${id}`,
  );
  citizen.stake = {
    endTime: plan.now + duration,
    hasVault: citizen.componentVault !== 0n || stakedVault !== 0n,
    stakedVault,
    bytes: 0n,
  };
  holdings.unstakedS1.delete(citizen.id);
  holdings.stakedS1.add(citizen.id);
  return true;
}

function stakeS2(plan: BlockPlan): boolean {
  const { holdings, random } = plan;
  const id = holdings.unstakedS2.pick(random);
  const citizen = id === undefined ? undefined : holdings.s2.get(id);
  if (!citizen || citizen.usableFromBlock > plan.blockIndex) return false;
  const optionId = Number(random.weighted(TIMELOCK_WEIGHTS));
  const [duration] = TIMELOCK_OPTIONS[STAKER_ASSET_ID.s2_citizen][optionId] ?? [0n];
  callStaker(
    plan,
    stakeCalldata(STAKER_ASSET_ID.s2_citizen, optionId, citizen.id),
    citizen.owner,
    `stake S2 ${id}`,
  );
  citizen.stake = { endTime: plan.now + duration, bytes: 0n };
  holdings.unstakedS2.delete(citizen.id);
  holdings.stakedS2.add(citizen.id);
  return true;
}

/** A deposit with odd wei so per-deposit truncation of the bonus shows; sometimes up to the cap. */
function depositAmount(random: SeededRandom, room: bigint): bigint {
  if (room <= 0n) return 0n;
  if (random.chance(0.1)) return room;
  const cap = room < 600n * BYTES_UNIT ? room : 600n * BYTES_UNIT;
  return random.bigintUpTo(cap);
}

function stakeBytes(plan: BlockPlan, season: Season): boolean {
  const { holdings } = plan;
  const id = holdings.staked(season).pick(plan.random);
  if (id === undefined) return false;
  const citizen = holdings.citizen(season, id);
  if (!citizen?.stake) return false;
  const cap = season === 1 && (citizen as S1Citizen).stake?.hasVault ? VAULT_CAP : NO_VAULT_CAP;
  const amount = depositAmount(plan.random, cap - citizen.stake.bytes);
  if (amount === 0n) return false;
  callStaker(
    plan,
    stakeCalldata(STAKER_ASSET_ID.bytes, 0, amount, id, BigInt(season)),
    citizen.owner,
    `stake ${amount} BYTES wei into S${season} ${id}`,
  );
  citizen.stake.bytes += amount;
  return true;
}

function withdraw(plan: BlockPlan, season: Season): boolean {
  const { holdings, random } = plan;
  const pool = holdings.staked(season);
  const id = pool.pick(random);
  if (id === undefined) return false;
  const citizen = holdings.citizen(season, id);
  if (!citizen?.stake || citizen.stake.endTime > plan.now) return false;
  callStaker(
    plan,
    withdrawCalldata(citizenAssetType(season), id),
    citizen.owner,
    `withdraw S${season} ${id}`,
  );
  const owner = holdings.walletOf(citizen.owner);
  if (season === 1) {
    const stakedVault = (citizen as S1Citizen).stake?.stakedVault ?? 0n;
    if (stakedVault !== 0n) owner.looseVaults.push(stakedVault);
  }
  citizen.stake = undefined;
  pool.delete(id);
  holdings.unstaked(season).add(id);

  // Some withdrawn citizens are sold: the new owner can stake them from the next block on.
  if (holdings.wallets.length > 1 && random.chance(0.35)) {
    let buyer = random.pick(holdings.wallets);
    while (buyer.address === citizen.owner) buyer = random.pick(holdings.wallets);
    plan.send({
      from: citizen.owner,
      to: season === 1 ? plan.addresses.s1Citizen : plan.addresses.s2Citizen,
      data: encodeFunctionData({
        abi: s1CitizenAbi,
        functionName: "transferFrom",
        args: [citizen.owner, buyer.address, id],
      }),
      gas: TOKEN_CALL_GAS,
      label: `sell S${season} ${id} to ${buyer.address}`,
    });
    citizen.owner = buyer.address;
    citizen.usableFromBlock = plan.blockIndex + 1;
  }
  return true;
}

function claim(plan: BlockPlan): boolean {
  const caller = plan.random.pick(plan.holdings.wallets);
  const recipient = plan.random.pick(plan.holdings.wallets);
  plan.send({
    from: caller.address,
    to: plan.addresses.bytes,
    data: encodeFunctionData({
      abi: bytesTokenAbi,
      functionName: "getReward",
      args: [recipient.address],
    }),
    gas: STAKER_CALL_GAS,
    label: `claim for ${recipient.address}`,
  });
  return true;
}

function stakeLP(plan: BlockPlan): boolean {
  const { random } = plan;
  const wallet = random.pick(plan.holdings.wallets);
  // Every stake restarts the position's timelock, so a wallet that keeps staking never reaches a
  // withdrawal and runs out of LP in a long live run; once it holds none, it waits for the lock.
  if (wallet.lpHeld === 0n) return false;
  // The first LP stake fixes the multiplier until the position is emptied.
  const optionId = wallet.lp.amount > 0n ? wallet.lp.optionId : random.int(0, 5);
  const [duration] = TIMELOCK_OPTIONS[STAKER_ASSET_ID.lp][optionId] ?? [0n];
  const amount = random.bigintUpTo(wallet.lpHeld < LP_STAKE_MAX ? wallet.lpHeld : LP_STAKE_MAX);
  callStaker(
    plan,
    stakeCalldata(STAKER_ASSET_ID.lp, optionId, amount),
    wallet.address,
    `stake ${amount} LP`,
  );
  wallet.lpHeld -= amount;
  wallet.lp = { amount: wallet.lp.amount + amount, optionId, endTime: plan.now + duration };
  return true;
}

function withdrawLP(plan: BlockPlan): boolean {
  const { random } = plan;
  const wallet = random.pick(plan.holdings.wallets);
  if (wallet.lp.amount === 0n || wallet.lp.endTime > plan.now) return false;
  const amount = random.chance(0.5) ? wallet.lp.amount : random.bigintUpTo(wallet.lp.amount);
  callStaker(
    plan,
    withdrawCalldata(STAKER_ASSET_ID.lp, amount),
    wallet.address,
    `withdraw ${amount} LP`,
  );
  wallet.lp.amount -= amount;
  wallet.lpHeld += amount;
  return true;
}

/** How often each action is drawn; the order of the keys is part of what the seed replays. */
const ACTION_WEIGHTS = {
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

const ACTIONS: Record<keyof typeof ACTION_WEIGHTS, (plan: BlockPlan) => boolean> = {
  stakeS1,
  stakeS2,
  bytesS1: (plan) => stakeBytes(plan, 1),
  bytesS2: (plan) => stakeBytes(plan, 2),
  withdrawS1: (plan) => withdraw(plan, 1),
  withdrawS2: (plan) => withdraw(plan, 2),
  claim,
  stakeLP,
  withdrawLP,
};

/** Plans up to `count` actions for the block (fewer when nothing valid is found). */
export function planBlock(plan: BlockPlan, count: number): void {
  let misses = 0;
  let planned = 0;
  while (planned < count && misses < count * 20 + 50) {
    const kind = plan.random.weighted(ACTION_WEIGHTS);
    if (ACTIONS[kind](plan)) planned++;
    else misses++;
  }
}
