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

/**
 * Where to read each stake so the chain answers for all of them at as few blocks as possible:
 * any block from the stake's own to its `heldThrough` shows its entry, so the stakes that
 * overlap share the earliest end among them (the fewest points that stab every interval),
 * which is the chunk's last block for every stake nothing moves later. A stake moved in its
 * own block has none (undefined).
 */
export function readBlocks(
  stakes: readonly StakerEventRow[],
  contexts: readonly StakeContext[],
): (bigint | undefined)[] {
  const blocks: (bigint | undefined)[] = stakes.map(() => undefined);
  const order = stakes
    .map((stake, i) => ({ from: stake.blockNumber, through: contexts[i]!.heldThrough, i }))
    .filter((interval) => interval.through >= interval.from)
    .sort((a, b) => (a.through < b.through ? -1 : a.through > b.through ? 1 : 0));
  let point: bigint | undefined;
  for (const interval of order) {
    if (point === undefined || point < interval.from) point = interval.through;
    blocks[interval.i] = point;
  }
  return blocks;
}

function chainOrder(a: StakerEventRow, b: StakerEventRow): number {
  if (a.blockNumber !== b.blockNumber) return a.blockNumber < b.blockNumber ? -1 : 1;
  return a.logIndex - b.logIndex;
}
