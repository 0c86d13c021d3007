import { describe, expect, test } from "bun:test";
import { checkRange, RangeRefused, rangeRefusal } from "../../lib/block-range.ts";
import { Refused } from "../../lib/fail.ts";

const bounds = { startBlock: 100n, head: 500n };

describe("the block ranges an operator may index", () => {
  test.each([
    ["the whole chain from the start block", { from: 100n, to: 500n }, bounds],
    ["one block at the head", { from: 500n, to: 500n }, bounds],
    ["a reindex of indexed blocks", { from: 150n, to: 300n }, { ...bounds, indexedBlock: 300n }],
  ])("%s is accepted", (_name, range, rangeBounds) => {
    expect(rangeRefusal(range, rangeBounds)).toBeNull();
    expect(() => checkRange(range, rangeBounds)).not.toThrow();
  });

  test.each([
    ["from after to", { from: 100n, to: 50n }, bounds, "from 100 is after to 50"],
    ["from below the start block", { from: 99n, to: 200n }, bounds, "below the start block 100"],
    ["to beyond the head", { from: 100n, to: 501n }, bounds, "beyond the chain head 500"],
    [
      "a reindex beyond the indexed block",
      { from: 150n, to: 301n },
      { ...bounds, indexedBlock: 300n },
      "beyond the indexed block 300",
    ],
    [
      "a reindex before anything is indexed",
      { from: 150n, to: 200n },
      { ...bounds, indexedBlock: null },
      "nothing is indexed yet",
    ],
  ])("%s is refused with a one-line reason", (_name, range, rangeBounds, reason) => {
    const refusal = rangeRefusal(range, rangeBounds);
    expect(refusal).toContain(reason);
    expect(refusal).not.toContain("\n");
    expect(() => checkRange(range, rangeBounds)).toThrow(RangeRefused);
  });

  test("a refused range is a refusal (exit code 2), not a failure", () => {
    expect(() => checkRange({ from: 2n, to: 1n }, bounds)).toThrow(Refused);
  });
});
