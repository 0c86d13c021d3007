/**
 * What every benchmark records: the machine, the versions of what it ran against, its
 * parameters, the raw figures and the ratios, as a JSON file under bench/results/ and a table
 * on stdout.
 */

import { mkdir, writeFile } from "node:fs/promises";
import { cpus, freemem, release, totalmem, type } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { anvilBinaryPath } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { openRedis } from "../../lib/redis.ts";

export const RESULTS_DIR = join(import.meta.dir, "..", "results");

export function machine() {
  const cores = cpus();
  return {
    cpus: cores.length,
    cpuModel: cores[0]?.model ?? "unknown",
    memoryBytes: totalmem(),
    freeMemoryBytesAtStart: freemem(),
    os: `${type()} ${release()}`,
    arch: process.arch,
  };
}

async function commandVersion(command: string[]): Promise<string> {
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "ignore" });
  const text = await new Response(child.stdout).text();
  await child.exited;
  return text.split("\n")[0]?.trim() ?? "unknown";
}

async function packageVersion(name: string): Promise<string> {
  const manifest = await Bun.file(
    join(import.meta.dir, "..", "..", "node_modules", name, "package.json"),
  ).json();
  return String((manifest as { version?: string }).version ?? "unknown");
}

export async function versions(extraPackages: string[] = []) {
  const sql = postgres(config.databaseUrl.replace(/\/[^/]*$/, "/postgres"), {
    max: 1,
    onnotice: () => {},
  });
  const [row] = await sql<{ server_version: string }[]>`show server_version`;
  await sql.end({ timeout: 5 });
  const packages: Record<string, string> = {};
  for (const name of ["viem", "bullmq", "elysia", "postgres", "drizzle-orm", ...extraPackages]) {
    packages[name] = await packageVersion(name);
  }
  return {
    bun: Bun.version,
    anvil: await commandVersion([anvilBinaryPath(), "--version"]),
    postgres: row?.server_version ?? "unknown",
    redis: await redisVersion(),
    packages,
  };
}

async function redisVersion(): Promise<string> {
  const redis = openRedis(config.redis, "queues");
  try {
    const info = await redis.info("server");
    return /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
  } finally {
    redis.disconnect();
  }
}

export type Report = {
  name: string;
  smoke: boolean;
  startedAt: string;
  finishedAt: string;
  machine: ReturnType<typeof machine>;
  versions: Awaited<ReturnType<typeof versions>>;
  parameters: Record<string, unknown>;
  raw: Record<string, unknown>;
  ratios: Record<string, number | null>;
  notes: string[];
};

/** What a benchmark measured; the machine, the versions and the finish time are added here. */
export type Measurements = Omit<Report, "finishedAt" | "machine" | "versions"> & {
  /** npm packages to report beyond the stack's own. */
  extraPackages?: string[];
};

/** Writes bench/results/<name>-<timestamp>.json and returns its path. */
export async function writeReport({ extraPackages, ...measured }: Measurements): Promise<string> {
  const report: Report = {
    ...measured,
    finishedAt: new Date().toISOString(),
    machine: machine(),
    versions: await versions(extraPackages),
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, "-");
  const path = join(RESULTS_DIR, `${report.name}-${stamp}.json`);
  await writeFile(
    path,
    `${JSON.stringify(report, (_, value) => (typeof value === "bigint" ? value.toString() : value), 2)}\n`,
  );
  return path;
}

/** A plain aligned table: the first row is the header. */
export function table(rows: (string | number)[][]): string {
  const text = rows.map((row) => row.map(String));
  const widths = text[0]!.map((_, column) =>
    Math.max(...text.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join("  ");
  return [
    line(text[0]!),
    widths.map((width) => "-".repeat(width)).join("  "),
    ...text.slice(1).map(line),
  ].join("\n");
}

export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** The nearest-rank percentile of already sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function log(line: string): void {
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
}
