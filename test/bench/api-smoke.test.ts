import { describe, expect, test } from "bun:test";
import { expectReport, runSmoke } from "./smoke.ts";

describe("benchmarks in smoke size", () => {
  test("the API bench completes and reports the API, cached and not, as of a block, and the soak against the base", async () => {
    // Two soak runs of a second, not three: last / first needs two, and each is a second of
    // both cores at full load.
    const report = await runSmoke("api", ["--soak", "2"]);
    expectReport(report, [
      "uncached_s1_over_base",
      "uncached_list_over_base",
      "cached_s1_over_base",
      "not_modified_s1_over_base",
      "uncached_s1_p99_over_base",
      "as_of_s1_over_uncached_s1",
      "as_of_list_over_uncached_list",
      "soak_last_over_first",
    ]);
    expect(report.parameters.loadAverageBefore).toHaveLength(3);
    // Every request is well-formed: a server answering one with an error measures nothing.
    const targets = Object.entries(report.raw as Record<string, { statusErrors?: number }>);
    const failing = targets.filter(([, target]) => (target.statusErrors ?? 0) > 0);
    expect(targets.filter(([, target]) => target.statusErrors === 0).length).toBeGreaterThan(8);
    expect(failing.map(([key]) => key)).toEqual([]);
  }, 300_000);
});
