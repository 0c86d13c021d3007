/**
 * A benchmark run in smoke size (`bun bench/<name>.ts --smoke`), as the test files under
 * test/bench run each: one file a bench, so the suite runs them side by side (each waits mostly
 * on its bench's child processes and node latency).
 */
import { expect } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { defaultWallets, loadScenario } from "../../bench/support/scenario-cache.ts";
import { config } from "../../lib/config.ts";
import { withDatabase } from "../../lib/database-url.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** The benches that load the cached scenario of their default seed at --smoke's 2,000 events. */
const ON_SMOKE_SCENARIO = new Set(["backfill", "mainnet", "api"]);
const SMOKE_SCENARIO = { seed: "bench", events: 2_000, wallets: defaultWallets(2_000) };

/**
 * Has the benches' cached scenario made before a bench starts. On a fresh clone each bench
 * would generate it into the same partial file, side by side; here one file generates it under
 * a Postgres advisory lock (released with the session if its process dies) and the rest wait,
 * then load it (about a second).
 */
async function ensureSmokeScenario() {
  const admin = postgres(withDatabase(config.databaseUrl, "postgres"), {
    max: 1,
    onnotice: () => {},
  });
  try {
    await admin`select pg_advisory_lock(hashtext('citizen-staking:bench-smoke-scenario'))`;
    const { node } = await loadScenario(SMOKE_SCENARIO);
    await node.stop();
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** Runs `bun bench/<name>.ts --smoke [flags]` and returns the report it wrote. */
export async function runSmoke(name: string, flags: string[] = []) {
  if (ON_SMOKE_SCENARIO.has(name)) await ensureSmokeScenario();
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
