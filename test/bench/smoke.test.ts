import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** Runs `bun bench/<name>.ts --smoke` and returns the report it wrote. */
async function runSmoke(name: string) {
  const child = Bun.spawn([process.execPath, `bench/${name}.ts`, "--smoke"], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0)
    throw new Error(`bench/${name}.ts --smoke exited ${code}:\n${stderr.slice(-3000)}`);
  const path = /^wrote (.+\.json)$/m.exec(stdout)?.[1];
  if (!path) throw new Error(`bench/${name}.ts --smoke wrote no report:\n${stdout}`);
  return JSON.parse(await readFile(path, "utf8")) as {
    smoke: boolean;
    machine: { cpus: number };
    versions: { bun: string; anvil: string; postgres: string };
    ratios: Record<string, number | null>;
  };
}

function expectReport(report: Awaited<ReturnType<typeof runSmoke>>, ratioFields: string[]) {
  expect(report.smoke).toBe(true);
  expect(report.machine.cpus).toBeGreaterThan(0);
  expect(report.versions.postgres).not.toBe("unknown");
  for (const field of ratioFields) expect(typeof report.ratios[field]).toBe("number");
}

describe("benchmarks in smoke size", () => {
  test("the backfill bench completes and reports each worker count against the limit", async () => {
    expectReport(await runSmoke("backfill"), ["real_w1_over_limit", "real_w2_over_limit"]);
  }, 300_000);

  test("the lag bench completes and reports p95 against the target", async () => {
    expectReport(await runSmoke("lag"), ["p95_over_target"]);
  }, 300_000);

  test("the API bench completes and reports the API, cached and not, and the soak against the base", async () => {
    expectReport(await runSmoke("api"), [
      "uncached_s1_over_base",
      "cached_s1_over_base",
      "not_modified_s1_over_base",
      "uncached_s1_p99_over_base",
      "soak_last_over_first",
    ]);
  }, 300_000);
});
