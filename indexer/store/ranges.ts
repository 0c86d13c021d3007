/**
 * Block-range arithmetic of the indexer, pure so it can be tested alone. Ranges are inclusive
 * [from, to] of block numbers.
 */
export interface BlockRange {
  from: bigint;
  to: bigint;
}

/** Splits [from, to] into ranges of at most `size` blocks, in order. */
export function splitRange(from: bigint, to: bigint, size: number): BlockRange[] {
  const ranges: BlockRange[] = [];
  for (let start = from; start <= to; start += BigInt(size)) {
    const end = start + BigInt(size) - 1n;
    ranges.push({ from: start, to: end < to ? end : to });
  }
  return ranges;
}

/** How far the indexed prefix reaches once `done` ranges (any order, may overlap) are added. */
export function contiguousEnd(indexed: bigint, done: readonly BlockRange[]): bigint {
  let reached = indexed;
  for (const range of [...done].sort(byStart)) {
    if (range.from > reached + 1n) break;
    if (range.to > reached) reached = range.to;
  }
  return reached;
}

/** The parts of (indexed, scheduled] that no range in `done` covers. */
export function missingRanges(
  indexed: bigint,
  scheduled: bigint,
  done: readonly BlockRange[],
): BlockRange[] {
  return subtractRanges([{ from: indexed + 1n, to: scheduled }], done);
}

/** The parts of `ranges` that none of `covered` touches. */
export function subtractRanges(
  ranges: readonly BlockRange[],
  covered: readonly BlockRange[],
): BlockRange[] {
  const holes = [...covered].sort(byStart);
  const out: BlockRange[] = [];
  for (const range of ranges) {
    let next = range.from;
    for (const hole of holes) {
      if (hole.to < next || hole.from > range.to) continue;
      if (hole.from > next) out.push({ from: next, to: hole.from - 1n });
      if (hole.to + 1n > next) next = hole.to + 1n;
    }
    if (next <= range.to) out.push({ from: next, to: range.to });
  }
  return out;
}

const byStart = (a: BlockRange, b: BlockRange) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0);
