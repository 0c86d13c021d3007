import { describe, expect, test } from "bun:test";
import { EventBudget } from "../../indexer/chunk-workers/event-budget.ts";
import { cutAtEvents } from "../../indexer/fetch/fetch-range.ts";

/** Whether `promise` has settled after the pending callbacks ran. */
async function settled(promise: Promise<unknown>) {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await Bun.sleep(0);
  return done;
}

describe("events one worker process holds at once", () => {
  test("a chunk waits while the others hold too many events, and goes once they are written", async () => {
    const budget = new EventBudget(2_000);
    const first = budget.hold();
    const second = budget.hold();
    const third = budget.hold();
    expect(await settled(first.admit(1_500))).toBe(true);
    const secondAdmitted = second.admit(1_000);
    expect(await settled(secondAdmitted)).toBe(false);
    // Chunks go in the order they asked: a small one does not overtake a waiting large one.
    const thirdAdmitted = third.admit(100);
    expect(await settled(thirdAdmitted)).toBe(false);
    first.release();
    expect(await settled(secondAdmitted)).toBe(true);
    expect(await settled(thirdAdmitted)).toBe(true);
  });

  test("a chunk larger than the budget goes alone, and an empty one never waits", async () => {
    const budget = new EventBudget(2_000);
    const dense = budget.hold();
    expect(await settled(dense.admit(5_000))).toBe(true);
    const empty = budget.hold();
    expect(await settled(empty.admit(0))).toBe(true);
    const next = budget.hold();
    const nextAdmitted = next.admit(10);
    expect(await settled(nextAdmitted)).toBe(false);
    dense.release();
    dense.release();
    expect(await settled(nextAdmitted)).toBe(true);
    // Released twice, given back once: the budget still counts the next chunk's 10.
    const after = budget.hold();
    expect(await settled(after.admit(1_995))).toBe(false);
  });
});

describe("a slice's staker logs counted span by span", () => {
  test("spans start at one block and span the blocks the budget's events fill at the last density, at most doubling", () => {
    const budget = new EventBudget(2_000);
    expect(budget.blocks()).toBe(1);
    budget.counted(1, 0);
    expect(budget.blocks()).toBe(2);
    budget.counted(2, 425);
    expect(budget.blocks()).toBe(4);
    budget.counted(4, 1_000);
    expect(budget.blocks()).toBe(8);
    budget.counted(8, 10);
    expect(budget.blocks()).toBe(16);
    // One block at a range's end: its density counts, its length does not hold the span back.
    budget.counted(1, 100);
    expect(budget.blocks()).toBe(20);
    budget.counted(47, 20_000);
    expect(budget.blocks()).toBe(4);
    // A thousand blocks or more, within the budget: a thin stretch, spanned at what the budget fills.
    budget.counted(5_000, 500);
    expect(budget.blocks()).toBe(20_000);
    budget.counted(20_000, 0);
    expect(budget.blocks()).toBe(Number.MAX_SAFE_INTEGER);
    budget.counted(1, 9_000);
    expect(budget.blocks()).toBe(1);
  });
});

describe("a slice cut short at the budget's events", () => {
  /** Logs in chain order: `counts[i]` of them in block 10 + i. */
  const logsIn = (...counts: number[]) =>
    counts.flatMap((count, index) =>
      Array.from({ length: count }, () => ({ blockNumber: 10n + BigInt(index) })),
    );

  test("ends after the last block wholly within the budget", () => {
    expect(cutAtEvents(logsIn(3, 0, 4, 5), 10)).toEqual({ block: 12n, logs: 7 });
    expect(cutAtEvents(logsIn(3, 0, 4, 4, 2), 9)).toEqual({ block: 12n, logs: 7 });
  });

  test("is not cut when its events fit, and a block past the budget goes alone, whole", () => {
    expect(cutAtEvents(logsIn(3, 0, 4, 3), 11)).toBeUndefined();
    expect(cutAtEvents(logsIn(0, 12, 1), 10)).toEqual({ block: 11n, logs: 12 });
    expect(cutAtEvents(logsIn(0, 12), 10)).toBeUndefined();
  });
});
