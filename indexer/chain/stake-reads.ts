import type { Address } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import type { Season } from "../../lib/vocabulary.ts";
import type { BlockAt } from "./block-pin.ts";
import type { BlockReads } from "./block-reads.ts";
import { ReadReverted } from "./call-failure.ts";
import type { StakerContracts } from "./contracts.ts";
import { vaultAbi } from "./token-abis.ts";

/** What the chain said at one block (the stake's own, or a later one) about one S1 or S2 stake. */
export interface StakeReads {
  timelockEndTime: bigint;
  /** stakedS1/stakedS2 points at the end of that block. */
  points: bigint;
  stakedVaultId?: bigint;
  hasVault?: boolean;
  creditYield?: string;
  identityPoints?: bigint;
  /** getConfiguredVaultMultiplier of the effective vault (absent when there is none). */
  configuredVaultMultiplier?: bigint;
  handMultiplier?: bigint;
  vaultCreditMultiplier?: string;
}

/** One stake and the block to read it at (by hash when given). */
export interface StakeAtBlock extends BlockAt {
  season: Season;
  citizenId: bigint;
  staker: Address;
  /** S1 only: the citizen's component vault (0 for none). */
  componentVaultId?: bigint;
}

/**
 * Reads each stake's state and the configuration it was scored with, at the stake's own block:
 * configuration calls emit no events, so "as of the stake" can only be read there. A call the
 * contract refuses throws ReadReverted.
 */
export function readStakes(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stakes: readonly StakeAtBlock[],
): Promise<StakeReads[]> {
  return Promise.all(stakes.map((stake) => readStake(blockReads, contracts, stake)));
}

/**
 * The same reads, each at the block given (a later one than the stake's, whose answers the
 * caller must prove hold for the stake): stakes read at one block share its multicalls. A stake
 * whose reads the contract refuses there has none (undefined): its own block will say why.
 */
export function tryReadStakes(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stakes: readonly StakeAtBlock[],
): Promise<(StakeReads | undefined)[]> {
  return Promise.all(
    stakes.map((stake) =>
      readStake(blockReads, contracts, stake).catch((error: unknown) => {
        if (error instanceof ReadReverted) return undefined;
        throw error;
      }),
    ),
  );
}

function readStake(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  return stake.season === 1
    ? readS1Stake(blockReads, contracts, stake)
    : readS2Stake(blockReads, contracts, stake);
}

async function readS2Stake(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  const [, timelockEndTime, points] = await blockReads.read({
    address: contracts.staker,
    abi: stakerAbi,
    functionName: "stakedS2",
    args: [stake.staker, stake.citizenId],
    blockNumber: stake.blockNumber,
    blockHash: stake.blockHash,
  });
  return { timelockEndTime, points };
}

async function readS1Stake(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  const block = { blockNumber: stake.blockNumber, blockHash: stake.blockHash };
  const componentVaultId = stake.componentVaultId ?? 0n;
  const entry = blockReads.read({
    address: contracts.staker,
    abi: stakerAbi,
    functionName: "stakedS1",
    args: [stake.staker, stake.citizenId],
    ...block,
  });
  const [[, timelockEndTime, points, stakedVaultId, hasVault], configuration] = await Promise.all([
    entry,
    readS1Configuration(blockReads, contracts, {
      citizenId: stake.citizenId,
      componentVaultId,
      // The staked vault counts only without a component vault: read from the entry, in the
      // same round as the first configuration reads.
      vaultId: componentVaultId !== 0n ? componentVaultId : entry.then((read) => read[3]),
      ...block,
    }),
  ]);
  return { timelockEndTime, points, stakedVaultId, hasVault, ...configuration };
}

/** The configuration figures an S1 stake is scored with, as one block's state gives them. */
export type StakeConfiguration = Pick<
  StakeReads,
  | "creditYield"
  | "identityPoints"
  | "configuredVaultMultiplier"
  | "handMultiplier"
  | "vaultCreditMultiplier"
>;

/** One S1 stake's citizen and vault, and the block to read its configuration at. */
export interface ConfigurationAtBlock extends BlockAt {
  citizenId: bigint;
  /** The citizen's component vault (0 for none): its credit yield follows it. */
  componentVaultId: bigint;
  /** The vault the stake counts (component, else staked, else 0). */
  vaultId: bigint;
}

/**
 * The configuration figures of each S1 stake at the block given, without its entry: another
 * block's state (the one before the stake's, or the reader's state override: a transaction's
 * prestate) to check against the points its own block shows. A stake whose reads the contract
 * refuses there (a citizen that did not exist yet) has none (undefined).
 */
export function tryReadConfigurations(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stakes: readonly ConfigurationAtBlock[],
): Promise<(StakeConfiguration | undefined)[]> {
  return Promise.all(
    stakes.map((stake) =>
      readS1Configuration(blockReads, contracts, stake).catch((error: unknown) => {
        if (error instanceof ReadReverted) return undefined;
        throw error;
      }),
    ),
  );
}

async function readS1Configuration(
  blockReads: BlockReads,
  contracts: StakerContracts,
  stake: Omit<ConfigurationAtBlock, "vaultId"> & { vaultId: bigint | Promise<bigint> },
): Promise<StakeConfiguration> {
  const block = { blockNumber: stake.blockNumber, blockHash: stake.blockHash };
  const at = { address: contracts.staker, abi: stakerAbi, ...block } as const;
  const [creditYield, handMultiplier, vaultId] = await Promise.all([
    blockReads.read({
      ...at,
      functionName: "getCreditYield",
      args: [stake.citizenId, stake.componentVaultId],
    }),
    blockReads.read({ ...at, functionName: "vaultCreditMultiplier", args: ["?"] }),
    stake.vaultId,
  ]);
  const [identityPoints, configuredVaultMultiplier, vaultCreditMultiplier] = await Promise.all([
    blockReads.read({ ...at, functionName: "identityCreditPoints", args: [creditYield] }),
    vaultId !== 0n
      ? blockReads.read({
          ...at,
          functionName: "getConfiguredVaultMultiplier",
          args: [vaultId],
        })
      : undefined,
    vaultId !== 0n
      ? blockReads.read({
          address: contracts.vault,
          abi: vaultAbi,
          functionName: "getCreditMultiplier",
          args: [vaultId],
          ...block,
        })
      : undefined,
  ]);
  return {
    creditYield,
    identityPoints,
    configuredVaultMultiplier,
    handMultiplier,
    vaultCreditMultiplier,
  };
}
