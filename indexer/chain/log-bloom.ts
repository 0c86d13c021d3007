import { Bloom } from "ox";
import type { Address, Hex } from "viem";
import { STAKER_TOPICS } from "./staker-log-decoder.ts";

/**
 * Whether a block's logsBloom admits a staker event: the staker's address and at least one of the
 * followed topic0s are both in it (Yellow Paper §4.3.1: three 11-bit indices from each item's
 * keccak256, through ox, the library viem is built on). A bloom never misses a log the block
 * holds, so false means the block has none; true may be a false positive, shared with other
 * contracts' logs.
 */
export function mayHoldStakerLogs(logsBloom: Hex, staker: Address): boolean {
  return (
    Bloom.contains(logsBloom, staker) &&
    STAKER_TOPICS.some((topic) => Bloom.contains(logsBloom, topic))
  );
}
