import type { Address } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import type { Season } from "../../lib/vocabulary.ts";
import type { BlockAt } from "./block-pin.ts";
import { ReadReverted } from "./call-failure.ts";
import type { StakerContracts } from "./contracts.ts";
import { vaultAbi } from "./token-abis.ts";
import type { ViewMemo } from "./view-memo.ts";

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
  memo: ViewMemo,
  contracts: StakerContracts,
  stakes: readonly StakeAtBlock[],
): Promise<StakeReads[]> {
  return Promise.all(stakes.map((stake) => readStake(memo, contracts, stake)));
}

/**
 * The same reads, each at the block given (a later one than the stake's, whose answers the
 * caller must prove hold for the stake): stakes read at one block share its multicalls. A stake
 * whose reads the contract refuses there has none (undefined): its own block will say why.
 */
export function tryReadStakes(
  memo: ViewMemo,
  contracts: StakerContracts,
  stakes: readonly StakeAtBlock[],
): Promise<(StakeReads | undefined)[]> {
  return Promise.all(
    stakes.map((stake) =>
      readStake(memo, contracts, stake).catch((error: unknown) => {
        if (error instanceof ReadReverted) return undefined;
        throw error;
      }),
    ),
  );
}

function readStake(
  memo: ViewMemo,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  return stake.season === 1
    ? readS1Stake(memo, contracts, stake)
    : readS2Stake(memo, contracts, stake);
}

async function readS2Stake(
  memo: ViewMemo,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  const [, timelockEndTime, points] = await memo.read({
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
  memo: ViewMemo,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  const block = { blockNumber: stake.blockNumber, blockHash: stake.blockHash };
  const at = { address: contracts.staker, abi: stakerAbi, ...block } as const;
  const componentVaultId = stake.componentVaultId ?? 0n;
  const [[, timelockEndTime, points, stakedVaultId, hasVault], creditYield, handMultiplier] =
    await Promise.all([
      memo.read({
        ...at,
        functionName: "stakedS1",
        args: [stake.staker, stake.citizenId],
      }),
      memo.read({
        ...at,
        functionName: "getCreditYield",
        args: [stake.citizenId, componentVaultId],
      }),
      memo.read({ ...at, functionName: "vaultCreditMultiplier", args: ["?"] }),
    ]);
  const vaultId = componentVaultId !== 0n ? componentVaultId : stakedVaultId;
  const [identityPoints, configuredVaultMultiplier, vaultCreditMultiplier] = await Promise.all([
    memo.read({ ...at, functionName: "identityCreditPoints", args: [creditYield] }),
    vaultId !== 0n
      ? memo.read({
          ...at,
          functionName: "getConfiguredVaultMultiplier",
          args: [vaultId],
        })
      : undefined,
    vaultId !== 0n
      ? memo.read({
          address: contracts.vault,
          abi: vaultAbi,
          functionName: "getCreditMultiplier",
          args: [vaultId],
          ...block,
        })
      : undefined,
  ]);
  return {
    timelockEndTime,
    points,
    stakedVaultId,
    hasVault,
    creditYield,
    identityPoints,
    configuredVaultMultiplier,
    handMultiplier,
    vaultCreditMultiplier,
  };
}
