import { describe, expect, test } from "bun:test";
import { createHeapCeiling } from "../../indexer/chunk-workers/heap-ceiling.ts";

describe("a worker's memory between slices", () => {
  test("under the ceiling nothing is collected", () => {
    expect(createHeapCeiling(Number.MAX_SAFE_INTEGER).settle()).toBe(false);
  });

  test("past the ceiling it is collected once, and not again until it has grown by the step", () => {
    const ceiling = createHeapCeiling(1, 1024 * 1024 * 1024);
    expect(ceiling.settle()).toBe(true);
    expect(ceiling.settle()).toBe(false);
    expect(createHeapCeiling(1, 0).settle()).toBe(true);
  });
});
