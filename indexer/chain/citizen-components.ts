import type { BlockAt } from "./block-pin.ts";
import type { BlockReads } from "./block-reads.ts";
import type { CitizenComponents, CitizenKey } from "./citizen-reads.ts";
import type { StakerContracts } from "./contracts.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi } from "./token-abis.ts";

const S1_GETTERS = [
  "getIdentityIdOfTokenId",
  "getVaultIdOfTokenId",
  "getItemCacheIdOfTokenId",
  "getLandDeedIdOfTokenId",
  "getRewardRateOfTokenId",
] as const;
const S2_GETTERS = [
  "getIdentityIdOfTokenId",
  "getItemCacheIdOfTokenId",
  "getLandDeedIdOfTokenId",
] as const;

/**
 * The components of each citizen at `at`: every getter of every citizen asked in one turn, so
 * they go many to an eth_call (block-reads.ts), then each S1 citizen's identity class the same
 * way. A getter that reverts throws ReadReverted naming it, as a single read of it would.
 * `firstRound` is told the components before the identity classes are asked (a stake's reads
 * need only its citizen's component vault).
 */
export async function readCitizenComponents(
  blockReads: BlockReads,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  at: BlockAt,
  firstRound?: (components: readonly CitizenComponents[]) => void,
): Promise<CitizenComponents[]> {
  const calls: Promise<bigint>[] = [];
  for (const { season, citizenId } of keys) {
    if (season === 1) {
      for (const functionName of S1_GETTERS) {
        calls.push(
          blockReads.read({
            address: contracts.s1Citizen,
            abi: s1CitizenAbi,
            functionName,
            args: [citizenId],
            ...at,
          }),
        );
      }
    } else {
      for (const functionName of S2_GETTERS) {
        calls.push(
          blockReads.read({
            address: contracts.s2Citizen,
            abi: s2CitizenAbi,
            functionName,
            args: [citizenId],
            ...at,
          }),
        );
      }
    }
  }
  const values = await Promise.all(calls);
  const components: CitizenComponents[] = [];
  let next = 0;
  const take = (count: number) => {
    next += count;
    return values.slice(next - count, next);
  };
  for (const { season, citizenId } of keys) {
    if (season === 1) {
      const [identityId, componentVaultId, itemCacheId, landDeedId, rewardRate] = take(
        S1_GETTERS.length,
      ) as [bigint, bigint, bigint, bigint, bigint];
      components.push({
        season,
        citizenId,
        identityId,
        itemCacheId,
        landDeedId,
        componentVaultId,
        rewardRate,
      });
    } else {
      const [identityId, itemCacheId, landDeedId] = take(S2_GETTERS.length) as [
        bigint,
        bigint,
        bigint,
      ];
      components.push({ season, citizenId, identityId, itemCacheId, landDeedId });
    }
  }
  firstRound?.(components);
  const s1 = components.filter((reading) => reading.season === 1);
  const classes = await Promise.all(
    s1.map((reading) =>
      blockReads.read({
        address: contracts.identity,
        abi: identityAbi,
        functionName: "getClass",
        args: [reading.identityId],
        ...at,
      }),
    ),
  );
  s1.forEach((reading, i) => {
    reading.identityClass = classes[i];
  });
  return components;
}
