import { describe, test } from "bun:test";
import { expectReport, runSmoke } from "./smoke.ts";

describe("benchmarks in smoke size", () => {
  test("the lag bench completes and reports p95 against the target", async () => {
    expectReport(await runSmoke("lag"), ["p95_over_target"]);
  }, 300_000);
});
