/**
 * A benchmark run in smoke size (`bun bench/<name>.ts --smoke`), as the test files under
 * test/bench run each: one file a bench, so the suite runs them side by side (each waits mostly
 * on its bench's child processes and node latency).
 */
import { expect } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** Runs `bun bench/<name>.ts --smoke [flags]` and returns the report it wrote. */
export async function runSmoke(name: string, flags: string[] = []) {
  const child = Bun.spawn([process.execPath, `bench/${name}.ts`, "--smoke", ...flags], {
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
    parameters: Record<string, unknown>;
    raw: Record<string, unknown>;
    ratios: Record<string, number | null>;
  };
}

export type SmokeReport = Awaited<ReturnType<typeof runSmoke>>;

/** What every bench reports, whatever its speed: the smoke flag, the machine, each ratio. */
export function expectReport(report: SmokeReport, ratioFields: string[]) {
  expect(report.smoke).toBe(true);
  expect(report.machine.cpus).toBeGreaterThan(0);
  expect(report.versions.postgres).not.toBe("unknown");
  for (const field of ratioFields) expect(typeof report.ratios[field]).toBe("number");
}
