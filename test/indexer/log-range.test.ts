import { describe, expect, test } from "bun:test";
import { LogRangeGovernor } from "../../indexer/chain/logs.ts";

describe("the eth_getLogs range governor", () => {
  test("a refused range halves, and growth stays below the refused span", () => {
    const governor = new LogRangeGovernor(1_000);
    expect(governor.shrink()).toBe(true);
    expect(governor.current).toBe(500);
    for (let i = 0; i < 10; i++) governor.grow(10);
    expect(governor.current).toBe(999);
  });

  test("large answers do not grow the range", () => {
    const governor = new LogRangeGovernor(1_000, 100);
    governor.grow(5_000);
    expect(governor.current).toBe(100);
    governor.grow(10);
    expect(governor.current).toBe(200);
  });

  test("after many answers it probes above a refused span again", () => {
    const governor = new LogRangeGovernor(1_000);
    governor.shrink();
    for (let i = 0; i < 300; i++) governor.grow(10);
    expect(governor.current).toBe(1_000);
  });

  test("a single block that is refused cannot shrink further", () => {
    const governor = new LogRangeGovernor(1, 1);
    expect(governor.shrink()).toBe(false);
  });
});
