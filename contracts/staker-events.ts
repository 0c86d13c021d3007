/**
 * The staker events the indexer follows, named once and typed by the staker ABI (a name the ABI
 * lacks fails the typecheck); their ABI items and topic0 come from the ABI. The log decoder, the
 * staker_events enum (db/schema.ts) and the benches' log filters take them from here. The ABI's
 * other events (OwnershipTransferred, ManagementUpdated, PermitUpdated) are access control and
 * change no stake.
 */
import { type AbiEvent, type ContractEventName, getAbiItem, type Hex, toEventSelector } from "viem";
import { mainnetStakerAbi as stakerAbi } from "./generated/MainnetStaker.ts";

export const STAKER_EVENTS = ["Stake", "Withdraw", "Claim"] as const satisfies readonly [
  ContractEventName<typeof stakerAbi>,
  ...ContractEventName<typeof stakerAbi>[],
];

export type StakerEventName = (typeof STAKER_EVENTS)[number];

/** Each followed event's ABI item, in STAKER_EVENTS' order. */
export const STAKER_EVENT_ABIS = STAKER_EVENTS.map(
  (name) => getAbiItem({ abi: stakerAbi, name }) as AbiEvent,
);

/** The topic0 of every followed event, for eth_getLogs filters. */
export const STAKER_TOPICS = STAKER_EVENT_ABIS.map((event) => toEventSelector(event)) as Hex[];
