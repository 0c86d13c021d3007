import { describe, expect, test } from "bun:test";
import { blockParameter, judgeBlock } from "../../api/modules/citizens/history.ts";
import { BadParameter } from "../../api/problems.ts";

const history = { firstBlock: 100n, indexedBlock: 200n, finalizedBlock: 150n };

describe("judging ?block=N against the indexed range", () => {
  test.each([
    ["the first block, below the boundary", 100n, { final: true }],
    ["the finality boundary itself", 150n, { final: true }],
    ["just above the boundary", 151n, { final: false }],
    ["the indexed block", 200n, { final: false }],
  ])("%s is answered", (_, block, expected) => {
    expect(judgeBlock(block, history)).toEqual(expected);
  });

  test("with no boundary reported yet, nothing is final", () => {
    expect(judgeBlock(120n, { ...history, finalizedBlock: null })).toEqual({ final: false });
  });

  test.each([
    ["below the first event", 99n, history, "blocks 100 to 200 are available"],
    ["above the indexed block", 201n, history, "blocks 100 to 200 are available"],
    ["with no event indexed", 5n, { ...history, firstBlock: null }, "no block is available yet"],
    ["with no checkpoint", 5n, { ...history, indexedBlock: null }, "no block is available yet"],
  ])("a block %s is a 400 naming block", (_, block, range, detail) => {
    let refusal: unknown;
    try {
      judgeBlock(block, range);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(BadParameter);
    expect((refusal as BadParameter).parameter).toBe("block");
    expect((refusal as BadParameter).message).toContain(detail);
  });

  test("a block beyond Postgres' bigint is sent clamped, so the statement never fails on it", () => {
    expect(blockParameter(2n ** 70n)).toBe(String(2n ** 63n - 1n));
    expect(blockParameter(18_500_000n)).toBe("18500000");
  });
});
