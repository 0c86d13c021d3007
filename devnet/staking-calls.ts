/**
 * Calldata for the staker's entry points and a wallet's one-time approvals, shared by the scenario
 * and the tests that hand-make transactions.
 */
import { type Address, encodeFunctionData, type Hex } from "viem";
import { bytesTokenAbi, neoTokyoStakerAbi, s1CitizenAbi } from "../contracts/generated/index.ts";
import {
  CITIZEN_ASSET_OF_SEASON,
  type Season,
  STAKER_ASSET_ID,
  type StakerAssetId,
} from "../lib/vocabulary.ts";
import type { DevnetAddresses } from "./deploy.ts";

/** Gas sent with a staker call (a stake, a withdrawal, a claim through the BYTES token). */
export const STAKER_CALL_GAS = 1_500_000n;
/** Gas sent with a token call: a mint, an approval, a transfer. */
export const TOKEN_CALL_GAS = 400_000n;

/** The words after the option id mean, per asset: S1 (citizen, vault, hand claimant), S2 (citizen), BYTES (amount, citizen, season), LP (amount). */
export function stakeCalldata(
  assetType: StakerAssetId,
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
export function withdrawCalldata(assetType: StakerAssetId, idOrAmount: bigint): Hex {
  return encodeFunctionData({
    abi: neoTokyoStakerAbi,
    functionName: "withdraw",
    args: [assetType, idOrAmount],
  });
}

export function citizenAssetType(season: Season): StakerAssetId {
  return STAKER_ASSET_ID[CITIZEN_ASSET_OF_SEASON[season]];
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
