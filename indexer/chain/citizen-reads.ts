import type { PublicClient } from "viem";
import type { Season } from "../../lib/vocabulary.ts";
import { type BlockAt, blockAt } from "./block-pin.ts";
import { createBlockReads } from "./block-reads.ts";
import { ReadReverted } from "./call-failure.ts";
import { readCitizenComponents } from "./citizen-components.ts";
import type { StakerContracts } from "./contracts.ts";
import { s1CitizenAbi } from "./token-abis.ts";

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
 * that reverts is recorded. `firstRound` is told the components before the identity classes
 * are asked (readCitizenComponents).
 */
export async function readCitizens(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  block: bigint | BlockAt,
  firstRound?: (components: readonly CitizenComponents[]) => void,
): Promise<CitizenReading[]> {
  const at = blockAt(block);
  const [components, tokenUris] = await Promise.all([
    readCitizenComponents(createBlockReads(client), contracts, keys, at, firstRound),
    readTokenUris(client, contracts, keys, at),
  ]);
  return components.map((reading, i) => ({ ...reading, tokenUri: tokenUris[i]! }));
}

/**
 * The tokenURI of each citizen at `block` (by hash when given), many to an eth_call (the indexer's reads, and an
 * operator's retry of failed metadata). A metadata contract may revert, answer garbage or halt,
 * so each call runs with a gas cap of its own (static-call-batch.ts). Whatever the batch has no
 * clean answer for is read again alone ("large answers", block-reads.ts), so each failure is
 * recorded in the very words the single call gives (a halt's name, a revert's reason, an answer
 * that does not decode). Both seasons' citizen contracts share tokenURI's ABI.
 */
export async function readTokenUris(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  block: bigint | BlockAt,
): Promise<TokenUriReading[]> {
  const at = blockAt(block);
  const blockReads = createBlockReads(client, { batching: "large answers" });
  return Promise.all(
    keys.map(async (key): Promise<TokenUriReading> => {
      try {
        const uri = await blockReads.read({
          address: key.season === 1 ? contracts.s1Citizen : contracts.s2Citizen,
          abi: s1CitizenAbi,
          functionName: "tokenURI",
          args: [key.citizenId],
          ...at,
        });
        return { uri };
      } catch (error) {
        if (error instanceof ReadReverted) return { reverted: error.reason };
        throw error;
      }
    }),
  );
}
