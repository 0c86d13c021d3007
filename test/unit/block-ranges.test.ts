import { describe, expect, test } from "bun:test";
import {
  contiguousEnd,
  missingRanges,
  splitRange,
  subtractRanges,
} from "../../indexer/store/ranges.ts";

const r = (from: number, to: number) => ({ from: BigInt(from), to: BigInt(to) });

describe("block-range arithmetic", () => {
  test("a range splits into chunk-sized pieces, the last one short", () => {
    expect(splitRange(10n, 24n, 5)).toEqual([r(10, 14), r(15, 19), r(20, 24)]);
    expect(splitRange(10n, 22n, 5)).toEqual([r(10, 14), r(15, 19), r(20, 22)]);
    expect(splitRange(10n, 9n, 5)).toEqual([]);
  });

  test("the indexed prefix grows only over contiguous ranges, in any order", () => {
    expect(contiguousEnd(9n, [r(15, 19), r(10, 14)])).toBe(19n);
    expect(contiguousEnd(9n, [r(11, 14)])).toBe(9n);
    expect(contiguousEnd(9n, [r(10, 20), r(12, 14), r(21, 21)])).toBe(21n);
  });

  test("missing ranges are the scheduled blocks no finished range covers", () => {
    expect(missingRanges(9n, 30n, [r(15, 19), r(25, 26)])).toEqual([
      r(10, 14),
      r(20, 24),
      r(27, 30),
    ]);
    expect(missingRanges(9n, 9n, [])).toEqual([]);
  });

  test("subtracting covered ranges keeps only the uncovered parts", () => {
    expect(subtractRanges([r(1, 10)], [r(0, 2), r(5, 6), r(9, 20)])).toEqual([r(3, 4), r(7, 8)]);
    expect(subtractRanges([r(1, 10), r(20, 22)], [r(1, 10)])).toEqual([r(20, 22)]);
  });
});
