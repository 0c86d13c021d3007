import type { CitizenRow, StakerEventRow } from "../../db/schema.ts";
import type { StakeReads } from "../chain/stake-reads.ts";
import { splitOption } from "./event-rows.ts";
import { bonusThrough, type StakeContext } from "./stake-context.ts";
import { figuresExplain, s2BasePoints } from "./stake-facts.ts";

/** Why a later block does not prove a stake's facts: its own block is read instead. */
export type UnprovenBecause =
  | "moved in its own block"
  | "not held at the read block"
  | "no reading"
  | "timelock end differs"
  | "points differ"
  | "zero points";

export type StakeProof =
  | { proven: true; reads: StakeReads; laterBonus: bigint }
  | { proven: false; because: UnprovenBecause };

/**
 * Whether what the chain holds at a later block of the chunk (`readAt`, chosen by readBlocks:
 * mostly the chunk's last) proves what one stake applied at its own block. Configuration calls
 * emit no events, so the stake's block is the only place that says so directly; the later
 * block says the same when
 *  - no event between them withdrew or re-staked the citizen, so the entry read there is the
 *    one this stake wrote, plus the BYTES its staker deposited since;
 *  - that entry ends its timelock at the stake block's time plus the option's duration;
 *  - its points, less those deposits, are the base points the configuration read there gives
 *    (S1: identity points x vault or "?" multiplier x timelock multiplier, the candidates
 *    appliedVaultMultiplier chooses from; S2: the timelock multiplier alone);
 *  - and, for S1, those base points are not zero: zero fits any multiplier, so it proves none.
 * Then the later reads are the stake's own, with the deposits made since inside their points.
 */
export function proveStake(input: {
  event: StakerEventRow;
  citizen: CitizenRow;
  context: StakeContext;
  /** The timestamp of the stake's block. */
  blockTime: bigint | undefined;
  /** The stake's entry and configuration as read at the end of a later block. */
  readAt: { blockNumber: bigint; reads: StakeReads | undefined } | undefined;
}): StakeProof {
  const { event, citizen, context, readAt } = input;
  if (readAt === undefined) return { proven: false, because: "moved in its own block" };
  if (readAt.blockNumber < event.blockNumber || readAt.blockNumber > context.heldThrough) {
    return { proven: false, because: "not held at the read block" };
  }
  const atLater = readAt.reads;
  if (atLater === undefined || input.blockTime === undefined || event.timelockOption == null) {
    return { proven: false, because: "no reading" };
  }
  const { high: duration, low: timelockMultiplier } = splitOption(event.timelockOption);
  if (atLater.timelockEndTime !== input.blockTime + duration) {
    return { proven: false, because: "timelock end differs" };
  }
  const laterBonus = bonusThrough(context, readAt.blockNumber);
  const basePoints = atLater.points - laterBonus;
  const proven = { proven: true, reads: atLater, laterBonus } as const;
  const unproven = { proven: false, because: "points differ" } as const;
  if (event.citizenSeason === 2) {
    return basePoints === s2BasePoints(timelockMultiplier) ? proven : unproven;
  }
  if (basePoints === 0n) return { proven: false, because: "zero points" };
  const fits = figuresExplain({ citizen, reads: atLater, timelockMultiplier, basePoints });
  return fits ? proven : unproven;
}
