/**
 * The scenario's model of who holds what: its wallets (loose vaults, LP), its S1 and S2 citizens
 * with their stakes, and pools of staked and unstaked citizen ids to pick from. The planners
 * choose every transaction against this model, so a revert means it and the contracts disagree.
 */
import { type Address, keccak256, slice, stringToHex } from "viem";
import type { Season } from "../lib/vocabulary.ts";
import type { SeededRandom } from "./random.ts";
import type { IdentityKind } from "./settings.ts";

export type S1Citizen = {
  id: bigint;
  owner: Address;
  identity: IdentityKind;
  componentVault: bigint;
  /** The first block (by index in this run) the owner may act on it: transfers land a block later. */
  usableFromBlock: number;
  stake?: { endTime: bigint; hasVault: boolean; stakedVault: bigint; bytes: bigint };
};

export type S2Citizen = {
  id: bigint;
  owner: Address;
  usableFromBlock: number;
  stake?: { endTime: bigint; bytes: bigint };
};

export type Wallet = {
  address: Address;
  looseVaults: bigint[];
  /** LP tokens the wallet holds and may still stake; the token refuses a stake past them. */
  lpHeld: bigint;
  lp: { amount: bigint; optionId: number; endTime: bigint };
};

/** Keeps ids in an array for uniform picks and a map for O(1) removal. */
export class Pool<T> {
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

export class ScenarioHoldings {
  readonly wallets: Wallet[] = [];
  private readonly walletByAddress = new Map<Address, Wallet>();
  readonly s1 = new Map<bigint, S1Citizen>();
  readonly s2 = new Map<bigint, S2Citizen>();
  readonly unstakedS1 = new Pool<bigint>();
  readonly stakedS1 = new Pool<bigint>();
  readonly unstakedS2 = new Pool<bigint>();
  readonly stakedS2 = new Pool<bigint>();

  get citizensStaked(): number {
    return this.stakedS1.size + this.stakedS2.size;
  }

  addWallet(wallet: Wallet): void {
    this.wallets.push(wallet);
    this.walletByAddress.set(wallet.address, wallet);
  }

  walletOf(address: Address): Wallet {
    const wallet = this.walletByAddress.get(address);
    if (!wallet) throw new Error(`${address} is not a scenario wallet`);
    return wallet;
  }

  /** A newly minted citizen, held unstaked by its owner. */
  addS1(citizen: S1Citizen): void {
    this.s1.set(citizen.id, citizen);
    this.unstakedS1.add(citizen.id);
  }

  addS2(citizen: S2Citizen): void {
    this.s2.set(citizen.id, citizen);
    this.unstakedS2.add(citizen.id);
  }

  citizen(season: Season, id: bigint): S1Citizen | S2Citizen | undefined {
    return season === 1 ? this.s1.get(id) : this.s2.get(id);
  }

  staked(season: Season): Pool<bigint> {
    return season === 1 ? this.stakedS1 : this.stakedS2;
  }

  unstaked(season: Season): Pool<bigint> {
    return season === 1 ? this.unstakedS1 : this.unstakedS2;
  }
}
