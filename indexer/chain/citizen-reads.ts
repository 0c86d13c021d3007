import type { Address, PublicClient } from "viem";
import type { Season } from "../../lib/vocabulary.ts";
import { ReadReverted } from "./call-failure.ts";
import type { StakerContracts } from "./contracts.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi } from "./token-abis.ts";
import { readUnbatched } from "./unbatched-read.ts";
import { readView } from "./view-read.ts";

export interface CitizenKey {
  season: Season;
  citizenId: bigint;
}

/** A citizen's tokenURI, or why the contract refused it (metadata is optional: data, not a fault). */
export type TokenUriReading = { uri: string } | { reverted: string };

/** What the citizen contracts say of one citizen, raw. */
export interface CitizenReading {
  season: Season;
  citizenId: bigint;
  identityId: bigint;
  itemCacheId: bigint;
  landDeedId: bigint;
  /** S1 only: 0 when the citizen has no component vault. */
  componentVaultId?: bigint;
  rewardRate?: bigint;
  identityClass?: string;
  tokenUri: TokenUriReading;
}

/**
 * The components of each citizen, read at `blockNumber`. The calls are issued together so
 * viem folds those of one block into a single multicall. A component getter that reverts throws
 * ReadReverted (the points or the record depend on it); a tokenURI that reverts is recorded.
 */
export async function readCitizens(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  blockNumber: bigint,
): Promise<CitizenReading[]> {
  return Promise.all(
    keys.map((key) =>
      key.season === 1
        ? readS1Citizen(client, contracts, key.citizenId, blockNumber)
        : readS2Citizen(client, contracts, key.citizenId, blockNumber),
    ),
  );
}

async function readS1Citizen(
  client: PublicClient,
  contracts: StakerContracts,
  citizenId: bigint,
  blockNumber: bigint,
): Promise<CitizenReading> {
  const read = (
    functionName:
      | "getIdentityIdOfTokenId"
      | "getVaultIdOfTokenId"
      | "getItemCacheIdOfTokenId"
      | "getLandDeedIdOfTokenId"
      | "getRewardRateOfTokenId",
  ) =>
    readView(client, {
      address: contracts.s1Citizen,
      abi: s1CitizenAbi,
      functionName,
      args: [citizenId],
      blockNumber,
    });
  const [identityId, componentVaultId, itemCacheId, landDeedId, rewardRate, tokenUri] =
    await Promise.all([
      read("getIdentityIdOfTokenId"),
      read("getVaultIdOfTokenId"),
      read("getItemCacheIdOfTokenId"),
      read("getLandDeedIdOfTokenId"),
      read("getRewardRateOfTokenId"),
      readTokenUri(client, contracts.s1Citizen, citizenId, blockNumber),
    ]);
  const identityClass = await readView(client, {
    address: contracts.identity,
    abi: identityAbi,
    functionName: "getClass",
    args: [identityId],
    blockNumber,
  });
  return {
    season: 1,
    citizenId,
    identityId,
    itemCacheId,
    landDeedId,
    componentVaultId,
    rewardRate,
    identityClass,
    tokenUri,
  };
}

async function readS2Citizen(
  client: PublicClient,
  contracts: StakerContracts,
  citizenId: bigint,
  blockNumber: bigint,
): Promise<CitizenReading> {
  const read = (
    functionName: "getIdentityIdOfTokenId" | "getItemCacheIdOfTokenId" | "getLandDeedIdOfTokenId",
  ) =>
    readView(client, {
      address: contracts.s2Citizen,
      abi: s2CitizenAbi,
      functionName,
      args: [citizenId],
      blockNumber,
    });
  const [identityId, itemCacheId, landDeedId, tokenUri] = await Promise.all([
    read("getIdentityIdOfTokenId"),
    read("getItemCacheIdOfTokenId"),
    read("getLandDeedIdOfTokenId"),
    readTokenUri(client, contracts.s2Citizen, citizenId, blockNumber),
  ]);
  return { season: 2, citizenId, identityId, itemCacheId, landDeedId, tokenUri };
}

/** The tokenURI of each citizen at `blockNumber` (an operator's retry of failed metadata). */
export function readTokenUris(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  blockNumber: bigint,
): Promise<TokenUriReading[]> {
  return Promise.all(
    keys.map((key) =>
      readTokenUri(
        client,
        key.season === 1 ? contracts.s1Citizen : contracts.s2Citizen,
        key.citizenId,
        blockNumber,
      ),
    ),
  );
}

async function readTokenUri(
  client: PublicClient,
  address: Address,
  citizenId: bigint,
  blockNumber: bigint,
): Promise<TokenUriReading> {
  try {
    const uri = await readUnbatched(client, {
      address,
      abi: s1CitizenAbi,
      functionName: "tokenURI",
      args: [citizenId],
      blockNumber,
    });
    return { uri };
  } catch (error) {
    if (error instanceof ReadReverted) return { reverted: error.reason };
    throw error;
  }
}
