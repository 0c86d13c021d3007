/**
 * A wallet's staked citizens in one comparable form, from the staker's own view at a block and
 * from the API's records: tests of the API hold the two equal (the chain is the oracle).
 */
import { type Address, formatUnits } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { createBlockReads } from "../../indexer/chain/block-reads.ts";

type ReadClient = Parameters<typeof createBlockReads>[0];

/** A citizen's record as the API serves it, the fields compared. */
export type ApiRecord = {
  type: "s1" | "s2";
  id: string;
  totalPoints: number;
  timelock: { endTime: number };
  bytes: { staked: number };
};

/** `type:id` → `points/timelock end/bytes staked`, as `getStakerPositions` says at `block`. */
export async function chainHolding(
  client: ReadClient,
  staker: Address,
  wallet: string,
  block: bigint,
): Promise<Map<string, string>> {
  const positions = await createBlockReads(client, { batching: "alone" }).read({
    address: staker,
    abi: stakerAbi,
    functionName: "getStakerPositions",
    args: [wallet as Address],
    blockNumber: block,
  });
  const holding = new Map<string, string>();
  for (const [type, citizens] of [
    ["s1", positions.stakedS1Citizens],
    ["s2", positions.stakedS2Citizens],
  ] as const) {
    for (const citizen of citizens) {
      holding.set(
        `${type}:${citizen.citizenId}`,
        `${citizen.points}/${citizen.timelockEndTime}/${Number(formatUnits(citizen.stakedBytes, 18))}`,
      );
    }
  }
  return holding;
}

/** The API's records in the same form. */
export function apiHolding(records: Iterable<unknown>): Map<string, string> {
  return new Map(
    [...records].map((value) => {
      const record = value as ApiRecord;
      return [
        `${record.type}:${record.id}`,
        `${record.totalPoints}/${record.timelock.endTime}/${record.bytes.staked}`,
      ];
    }),
  );
}
