import { describe, expect, test } from "bun:test";
import { EventBudget } from "../../indexer/chunk-workers/event-budget.ts";

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
