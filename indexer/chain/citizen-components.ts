import type { PublicClient } from "viem";
import { type BatchedView, readBatchedViews } from "./batched-views.ts";
import type { BlockAt } from "./block-pin.ts";
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
 * The components of each citizen at `at`: every getter of every citizen in one list of calls,
 * many to an eth_call (batched-views.ts), then each S1 citizen's identity class the same way. A
 * getter that reverts throws ReadReverted naming it, as a single read of it would.
 */
export async function readCitizenComponents(
  client: PublicClient,
  contracts: StakerContracts,
  keys: readonly CitizenKey[],
  at: BlockAt,
): Promise<CitizenComponents[]> {
  const calls: BatchedView[] = [];
  for (const { season, citizenId } of keys) {
    const [address, abi, names] =
      season === 1
        ? [contracts.s1Citizen, s1CitizenAbi, S1_GETTERS]
        : [contracts.s2Citizen, s2CitizenAbi, S2_GETTERS];
    for (const functionName of names) calls.push({ address, abi, functionName, args: [citizenId] });
  }
  const values = (await Promise.all(readBatchedViews(client, calls, at))) as bigint[];
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
  const s1 = components.filter((reading) => reading.season === 1);
  const classes = await Promise.all(
    readBatchedViews(
      client,
      s1.map((reading) => ({
        address: contracts.identity,
        abi: identityAbi,
        functionName: "getClass",
        args: [reading.identityId],
      })),
      at,
    ),
  );
  s1.forEach((reading, i) => {
    reading.identityClass = classes[i] as string;
  });
  return components;
}
