/**
 * Calldata for the staker's entry points and a wallet's one-time approvals, shared by the scenario
 * and the tests that hand-make transactions.
 */
import { type Address, encodeFunctionData, type Hex } from "viem";
import { bytesTokenAbi, neoTokyoStakerAbi, s1CitizenAbi } from "../contracts/generated/index.ts";
import type { DevnetAddresses } from "./deploy.ts";
import { AssetType } from "./settings.ts";

/** The words after the option id mean, per asset: S1 (citizen, vault, hand claimant), S2 (citizen), BYTES (amount, citizen, season), LP (amount). */
export function stakeCalldata(
  assetType: AssetType,
  optionId: number,
  a: bigint,
  b = 0n,
  c = 0n,
): Hex {
  return encodeFunctionData({
    abi: neoTokyoStakerAbi,
    functionName: "stake",
    args: [assetType, BigInt(optionId), a, b, c],
  });
}

/** A citizen id for S1/S2, an amount for LP. */
export function withdrawCalldata(assetType: AssetType, idOrAmount: bigint): Hex {
  return encodeFunctionData({
    abi: neoTokyoStakerAbi,
    functionName: "withdraw",
    args: [assetType, idOrAmount],
  });
}

export function citizenAssetType(season: 1 | 2): AssetType {
  return season === 1 ? AssetType.S1_CITIZEN : AssetType.S2_CITIZEN;
}

/** The wallet's approvals of the staker: its citizens and vaults, its BYTES and its LP. */
export function approvalTransactions(
  addresses: DevnetAddresses,
  wallet: Address,
): { from: Address; to: Address; data: Hex; label: string }[] {
  const nfts = [addresses.s1Citizen, addresses.s2Citizen, addresses.vault].map((to) => ({
    from: wallet,
    to,
    data: encodeFunctionData({
      abi: s1CitizenAbi,
      functionName: "setApprovalForAll",
      args: [addresses.staker, true],
    }),
    label: `approve staker on ${to} for ${wallet}`,
  }));
  const tokens = [addresses.bytes, addresses.lp].map((to) => ({
    from: wallet,
    to,
    data: encodeFunctionData({
      abi: bytesTokenAbi,
      functionName: "approve",
      args: [addresses.staker, 2n ** 255n],
    }),
    label: `approve staker on ${to} for ${wallet}`,
  }));
  return [...nfts, ...tokens];
}
