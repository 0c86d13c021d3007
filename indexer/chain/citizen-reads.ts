import { type Address, decodeFunctionResult, type Hex, type PublicClient } from "viem";
import type { Season } from "../../lib/vocabulary.ts";
import { type BlockAt, blockAt } from "./block-pin.ts";
import { ReadReverted } from "./call-failure.ts";
import { readCitizenComponents } from "./citizen-components.ts";
import type { StakerContracts } from "./contracts.ts";
import { prepareCall } from "./prepared-call.ts";
import { readStaticCalls } from "./static-call-batch.ts";
import { s1CitizenAbi } from "./token-abis.ts";
import { readUnbatched } from "./unbatched-read.ts";

/** Both seasons' citizen contracts share tokenURI's selector. */
const tokenUriCalldata = prepareCall(s1CitizenAbi, "tokenURI");

export interface CitizenKey {
  season: Season;
  citizenId: bigint;
}

/** A citizen's tokenURI, or why the contract refused it (metadata is optional: data, not a fault). */
export type TokenUriReading = { uri: string } | { reverted: string };

/** What the citizen contracts say of one citizen's components, raw. */
export interface CitizenComponents {
  season: Season;
  citizenId: bigint;
  identityId: bigint;
  itemCacheId: bigint;
  landDeedId: bigint;
  /** S1 only: 0 when the citizen has no component vault. */
  componentVaultId?: bigint;
  rewardRate?: bigint;
  identityClass?: string;
}

/** What the citizen contracts say of one citizen, raw. */
export interface CitizenReading extends CitizenComponents {
  tokenUri: TokenUriReading;
}

/**
 * The components and tokenURI of each citizen, read at `block` (by hash when given). The
 * component calls of all the citizens go many to an eth_call through the static-call reader
 * (citizen-components.ts); the tokenURIs in batches of their own (readTokenUris). A component
 * getter that reverts throws ReadReverted (the points or the record depend on it); a tokenURI
 * that reverts is recorded.
 */
export async function readCitizens(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  block: bigint | BlockAt,
): Promise<CitizenReading[]> {
  const at = blockAt(block);
  const [components, tokenUris] = await Promise.all([
    readCitizenComponents(client, contracts, keys, at),
    readTokenUris(client, contracts, keys, at),
  ]);
  return components.map((reading, i) => ({ ...reading, tokenUri: tokenUris[i]! }));
}

/**
 * The tokenURI of each citizen at `block` (by hash when given), many to an eth_call (the indexer's reads, and an
 * operator's retry of failed metadata). A metadata contract may revert, answer garbage or halt,
 * so each call runs with a gas cap of its own (static-call-batch.ts). Whatever the batch has no
 * clean answer for is read again alone, so each failure is recorded in the very words the
 * single call gives (a halt's name, a revert's reason, an answer that does not decode).
 */
export async function readTokenUris(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  block: bigint | BlockAt,
): Promise<TokenUriReading[]> {
  const at = blockAt(block);
  const addressOf = (key: CitizenKey) =>
    key.season === 1 ? contracts.s1Citizen : contracts.s2Citizen;
  const returned = await readStaticCalls(
    client,
    keys.map((key) => ({ to: addressOf(key), data: tokenUriCalldata([key.citizenId]) })),
    at,
  );
  return Promise.all(
    keys.map((key, i) => {
      const uri = decodedTokenUri(returned[i]);
      return uri === undefined ? readTokenUri(client, addressOf(key), key.citizenId, at) : { uri };
    }),
  );
}

function decodedTokenUri(data: Hex | undefined): string | undefined {
  if (data === undefined) return undefined;
  try {
    return decodeFunctionResult({ abi: s1CitizenAbi, functionName: "tokenURI", data });
  } catch {
    // Read again alone: the single call records why it does not decode.
    return undefined;
  }
}

/** One tokenURI in an eth_call of its own, a revert recorded as the reading. */
async function readTokenUri(
  client: PublicClient,
  address: Address,
  citizenId: bigint,
  at: BlockAt,
): Promise<TokenUriReading> {
  try {
    const uri = await readUnbatched(client, {
      address,
      abi: s1CitizenAbi,
      functionName: "tokenURI",
      args: [citizenId],
      ...at,
    });
    return { uri };
  } catch (error) {
    if (error instanceof ReadReverted) return { reverted: error.reason };
    throw error;
  }
}
