/**
 * The block ranges an operator may ask to index. A range past the head makes chunk jobs for
 * blocks that do not exist (each retried until it fails, while the follower waits behind them);
 * a range below the start block can hold no staker event; an empty range would print "done" for
 * nothing. Pure, so every rule is a unit test.
 */
import { Refused } from "./fail.ts";

export class RangeRefused extends Refused {
  override name = "RangeRefused";
}

export interface BlockRange {
  from: bigint;
  to: bigint;
}

export interface RangeBounds {
  /** The staker's deploy block (or START_BLOCK): nothing below it is indexed. */
  startBlock: bigint;
  /** The chain head now. */
  head: bigint;
  /** For a reindex: the checkpoint, since only indexed blocks can be indexed again. */
  indexedBlock?: bigint | null;
}

/** Why the range is refused, in one line, or null when it may be indexed. One rule per line. */
export function rangeRefusal({ from, to }: BlockRange, bounds: RangeBounds): string | null {
  if (from > to) return `from ${from} is after to ${to}: the range is empty`;
  if (from < bounds.startBlock)
    return `from ${from} is below the start block ${bounds.startBlock} (the staker's deployment or START_BLOCK)`;
  if (to > bounds.head) return `to ${to} is beyond the chain head ${bounds.head}`;
  if (bounds.indexedBlock === null) return "nothing is indexed yet; use backfill";
  if (bounds.indexedBlock !== undefined && to > bounds.indexedBlock)
    return `to ${to} is beyond the indexed block ${bounds.indexedBlock}; reindex covers indexed blocks only, use backfill beyond`;
  return null;
}

/** Throws RangeRefused with the reason when the range is refused. */
export function checkRange(range: BlockRange, bounds: RangeBounds): void {
  const reason = rangeRefusal(range, bounds);
  if (reason !== null) throw new RangeRefused(reason);
}
