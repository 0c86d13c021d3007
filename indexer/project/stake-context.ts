import type { StakerEventRow } from "../../db/schema.ts";
import { bytesBonus, isCitizenAsset } from "../../lib/vocabulary.ts";

/** What the other events of a chunk say about one of its citizen stakes. */
export interface StakeContext {
  /**
   * The last block whose end state still holds this stake's entry: the chunk's last block, or
   * the block before the next event of the chunk that withdraws or re-stakes the citizen (below
   * the stake's own block when that event is in the same block).
   */
  heldThrough: bigint;
  /** Its staker's BYTES deposits into the citizen after it and before any such event. */
  laterDeposits: { blockNumber: bigint; bonus: bigint }[];
  /** BYTES bonus its staker deposited into the citizen after it, in its own block. */
  laterBonusInBlock: bigint;
  /** How many stakes of the same citizen the same transaction made before this one. */
  occurrenceInTransaction: number;
}

const citizenKey = (event: StakerEventRow) => `${event.citizenSeason}:${event.citizenId}`;
const eventKey = (event: StakerEventRow) => `${event.blockNumber}:${event.logIndex}`;
const isCitizenStake = (event: StakerEventRow) =>
  event.event === "Stake" && isCitizenAsset(event.assetType);
const isBytesDeposit = (event: StakerEventRow) =>
  event.event === "Stake" && event.assetType === "bytes";

/**
 * The context of each of `stakes` (the citizen Stake events among `events`, a chunk ending at
 * block `to`), in their order. Each citizen's events are walked once, so a chunk's cost grows
 * with its events, not with stakes x events.
 */
export function stakeContexts(
  stakes: readonly StakerEventRow[],
  events: readonly StakerEventRow[],
  to: bigint,
): StakeContext[] {
  const byCitizen = new Map<string, StakerEventRow[]>();
  for (const event of [...events].sort(chainOrder)) {
    if (event.citizenId == null) continue;
    const list = byCitizen.get(citizenKey(event));
    if (list) list.push(event);
    else byCitizen.set(citizenKey(event), [event]);
  }

  const contexts = new Map<string, StakeContext>();
  for (const citizenEvents of byCitizen.values()) {
    let open: { stake: StakerEventRow; context: StakeContext } | undefined;
    const seenInTransaction = new Map<string, number>();
    for (const event of citizenEvents) {
      if (isBytesDeposit(event)) {
        if (open && event.account === open.stake.account) {
          const bonus = bytesBonus(event.amountOrTokenId ?? 0n);
          open.context.laterDeposits.push({ blockNumber: event.blockNumber, bonus });
          if (event.blockNumber === open.stake.blockNumber) open.context.laterBonusInBlock += bonus;
        }
        continue;
      }
      if (!isCitizenAsset(event.assetType)) continue;
      if (open) open.context.heldThrough = event.blockNumber - 1n;
      open = undefined;
      if (!isCitizenStake(event)) continue;
      const occurrence = seenInTransaction.get(event.transactionHash) ?? 0;
      seenInTransaction.set(event.transactionHash, occurrence + 1);
      const context: StakeContext = {
        heldThrough: to,
        laterDeposits: [],
        laterBonusInBlock: 0n,
        occurrenceInTransaction: occurrence,
      };
      contexts.set(eventKey(event), context);
      open = { stake: event, context };
    }
  }
  return stakes.map((stake) => {
    const context = contexts.get(eventKey(stake));
    if (!context) throw new Error(`stake ${stake.blockNumber}/${stake.logIndex} is not in events`);
    return context;
  });
}

/** The BYTES bonus inside the stake's points at the end of `blockNumber` (at most heldThrough). */
export function bonusThrough(context: StakeContext, blockNumber: bigint): bigint {
  let bonus = 0n;
  for (const deposit of context.laterDeposits) {
    if (deposit.blockNumber <= blockNumber) bonus += deposit.bonus;
  }
  return bonus;
}

function chainOrder(a: StakerEventRow, b: StakerEventRow): number {
  if (a.blockNumber !== b.blockNumber) return a.blockNumber < b.blockNumber ? -1 : 1;
  return a.logIndex - b.logIndex;
}
