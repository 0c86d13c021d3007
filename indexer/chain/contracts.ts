import type { Address, PublicClient } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";

/** The staker and the token contracts it reads, discovered from the staker itself. */
export interface StakerContracts {
  staker: Address;
  s1Citizen: Address;
  s2Citizen: Address;
  vault: Address;
  identity: Address;
  bytes: Address;
  lp: Address;
}

export async function discoverContracts(
  client: PublicClient,
  staker: Address,
): Promise<StakerContracts> {
  const read = (
    functionName: "S1_CITIZEN" | "S2_CITIZEN" | "VAULT" | "IDENTITY" | "BYTES" | "LP",
  ) => client.readContract({ address: staker, abi: stakerAbi, functionName });
  const [s1Citizen, s2Citizen, vault, identity, bytes, lp] = await Promise.all([
    read("S1_CITIZEN"),
    read("S2_CITIZEN"),
    read("VAULT"),
    read("IDENTITY"),
    read("BYTES"),
    read("LP"),
  ]);
  const lower = (address: Address) => address.toLowerCase() as Address;
  return {
    staker: lower(staker),
    s1Citizen: lower(s1Citizen),
    s2Citizen: lower(s2Citizen),
    vault: lower(vault),
    identity: lower(identity),
    bytes: lower(bytes),
    lp: lower(lp),
  };
}
