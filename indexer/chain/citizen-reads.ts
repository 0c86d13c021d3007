import type { PublicClient } from "viem";
import type { CitizenRow } from "../../db/schema.ts";
import type { Season } from "../project/event-rows.ts";
import { parseTokenMetadata } from "../project/metadata.ts";
import { ReadReverted } from "./call-failure.ts";
import type { StakerContracts } from "./contracts.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi } from "./token-abis.ts";
import { readUnbatched } from "./unbatched-read.ts";
import { readView } from "./view-read.ts";

export interface CitizenKey {
  season: Season;
  citizenId: bigint;
}

export const HAND_OF_CITADEL = "Hand of Citadel";

/**
 * The components of each citizen, read at `blockNumber`. The calls are issued together so
 * viem folds those of one block into a single multicall.
 */
export async function readCitizens(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  blockNumber: bigint,
): Promise<CitizenRow[]> {
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
): Promise<CitizenRow> {
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
  const [identityId, componentVaultId, itemCacheId, landDeedId, rewardRate, uri] =
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
  const { name, image } = parseTokenMetadata(uri);
  return {
    season: 1,
    citizenId,
    identityId,
    itemCacheId,
    landDeedId,
    componentVaultId,
    rewardRate,
    identityClass,
    isHand: identityClass === HAND_OF_CITADEL,
    name,
    image,
  };
}

async function readS2Citizen(
  client: PublicClient,
  contracts: StakerContracts,
  citizenId: bigint,
  blockNumber: bigint,
): Promise<CitizenRow> {
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
  const [identityId, itemCacheId, landDeedId, uri] = await Promise.all([
    read("getIdentityIdOfTokenId"),
    read("getItemCacheIdOfTokenId"),
    read("getLandDeedIdOfTokenId"),
    readTokenUri(client, contracts.s2Citizen, citizenId, blockNumber),
  ]);
  const { name, image } = parseTokenMetadata(uri);
  return { season: 2, citizenId, identityId, itemCacheId, landDeedId, name, image };
}

/** Metadata is optional: a reverting or absent tokenURI leaves name and image to the API's fallback. */
async function readTokenUri(
  client: PublicClient,
  address: `0x${string}`,
  citizenId: bigint,
  blockNumber: bigint,
): Promise<string | undefined> {
  try {
    return await readUnbatched(client, {
      address,
      abi: s1CitizenAbi,
      functionName: "tokenURI",
      args: [citizenId],
      blockNumber,
    });
  } catch (error) {
    if (error instanceof ReadReverted) return undefined;
    throw error;
  }
}
