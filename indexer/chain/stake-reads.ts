import type { Address } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import type { Season } from "../../lib/vocabulary.ts";
import type { StakerContracts } from "./contracts.ts";
import { vaultAbi } from "./token-abis.ts";
import type { ViewMemo } from "./view-memo.ts";

/** What the chain said at the stake's block about one S1 or S2 stake. */
export interface StakeReads {
  timelockEndTime: bigint;
  /** stakedS1/stakedS2 points at the end of the stake's block. */
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

export interface StakeAtBlock {
  season: Season;
  citizenId: bigint;
  staker: Address;
  blockNumber: bigint;
  /** S1 only: the citizen's component vault (0 for none). */
  componentVaultId?: bigint;
}

/**
 * Reads each stake's state and the configuration it was scored with, at the stake's own block:
 * configuration calls emit no events, so "as of the stake" can only be read there. A call the
 * contract refuses throws ReadReverted. Calls go through `memo`: stakes of one block share the
 * "?" multiplier, a credit yield's points and a vault's multiplier.
 */
export function readStakes(
  memo: ViewMemo,
  contracts: StakerContracts,
  stakes: readonly StakeAtBlock[],
): Promise<StakeReads[]> {
  return Promise.all(stakes.map((stake) => readStake(memo, contracts, stake)));
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
  });
  return { timelockEndTime, points };
}

async function readS1Stake(
  memo: ViewMemo,
  contracts: StakerContracts,
  stake: StakeAtBlock,
): Promise<StakeReads> {
  const at = { address: contracts.staker, abi: stakerAbi, blockNumber: stake.blockNumber } as const;
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
          blockNumber: stake.blockNumber,
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
