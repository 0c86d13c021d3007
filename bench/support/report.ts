/**
 * What every benchmark records (a JSON file under bench/results/: machine, versions, parameters,
 * raw figures, ratios) and prints: tables, each figure beside its target (never asserted).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, freemem, loadavg, release, totalmem, type } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { anvilBinaryPath } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { withDatabase } from "../../lib/database-url.ts";
import { openRedis } from "../../lib/redis.ts";
import type { ChunkWritePoint } from "../../test/support/synthetic-history.ts";

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

/** The 1, 5 and 15 minute load averages: on a shared machine the ratios hold, the rates do not. */
const loadAverage = () => loadavg().map((value) => round(value, 2));

async function versions() {
  const sql = postgres(withDatabase(config.databaseUrl, "postgres"), { max: 1 });
  const [row] = await sql<{ server_version: string }[]>`show server_version`;
  await sql.end({ timeout: 5 });
  const redis = openRedis(config.redis, "queues");
  const info = await redis.info("server").finally(() => redis.disconnect());
  const anvil = Bun.spawn([anvilBinaryPath(), "--version"], { stdout: "pipe", stderr: "ignore" });
  const packages: Record<string, string> = {};
  for (const name of ["viem", "bullmq", "elysia", "postgres", "drizzle-orm"]) {
    const manifest = Bun.file(join(import.meta.dir, "../../node_modules", name, "package.json"));
    packages[name] = String(((await manifest.json()) as { version?: string }).version);
  }
  return {
    bun: Bun.version,
    anvil: (await new Response(anvil.stdout).text()).split("\n")[0]?.trim() ?? "unknown",
    postgres: row?.server_version ?? "unknown",
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown",
    packages,
  };
}

/** What a benchmark measured; its flags, the machine, the versions and the times are added. */
type Measurements = {
  parameters?: Record<string, unknown>;
  raw: Record<string, unknown>;
  ratios: Record<string, number | null>;
};

/** A run's report: `finish()` reads the load again; `write` says on stdout where it put it. */
export function startReport(name: string, flags: { smoke: boolean }) {
  const startedAt = new Date().toISOString();
  const load = { before: loadAverage(), after: loadAverage() };
  return {
    startedAt,
    load,
    finish: () => Object.assign(load, { after: loadAverage() }),
    async write({ parameters, ...measured }: Measurements) {
      const loadAverages = { loadAverageBefore: load.before, loadAverageAfter: load.after };
      const report = {
        name,
        smoke: flags.smoke,
        startedAt,
        parameters: { ...flags, ...parameters, ...loadAverages },
        ...measured,
        finishedAt: new Date().toISOString(),
        machine: machine(),
        versions: await versions(),
      };
      await mkdir(RESULTS_DIR, { recursive: true });
      const path = join(RESULTS_DIR, `${name}-${startedAt.replace(/[:.]/g, "-")}.json`);
      const bigints = (_: string, value: unknown) =>
        typeof value === "bigint" ? `${value}` : value;
      await writeFile(path, `${JSON.stringify(report, bigints, 2)}\n`);
      console.log(`\nwrote ${path}`);
    },
  };
}

export type Cell = string | number | null | undefined;

/** A plain aligned table: the first row is the header; a missing figure shows as "-". */
export function table(rows: Cell[][]): string {
  const text = rows.map((row) => row.map((cell) => String(cell ?? "-")));
  const widths = text[0]!.map((_, column) =>
    Math.max(...text.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, n) => (n === 0 ? cell.padEnd(widths[n]!) : cell.padStart(widths[n]!)))
      .join("  ");
  return [
    line(text[0]!),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...text.slice(1).map(line),
  ].join("\n");
}

/** One row an item: `spec` names each column and reads its cell from the item. */
export function columns<T>(items: readonly T[], spec: Record<string, (item: T) => Cell>): string {
  const cells = Object.values(spec);
  return table([Object.keys(spec), ...items.map((item) => cells.map((cell) => cell(item)))]);
}

export function print(...blocks: string[]): void {
  for (const block of blocks) console.log(`\n${block}`);
}

/** The chunk write time at each point of a stored history (the as-of bench). */
export function chunkWriteTable(points: ChunkWritePoint[], chunkEvents: number) {
  const title = `chunk write (${chunkEvents} events; median of the last 3 chunks)`;
  return `${title}\n${columns(points, {
    "stored events": (point) => point.storedEvents,
    "chunk write ms": (point) => point.chunkWriteMs,
    "load 1m": (point) => point.load1m,
  })}`;
}

export type Target = { atLeast: number } | { atMost: number } | { below: number };

export function targetText(target: Target): string {
  if ("atLeast" in target) return `>= ${target.atLeast}`;
  return "atMost" in target ? `<= ${target.atMost}` : `< ${target.below}`;
}

/** "<value> (met)" or "<value> (NOT met)"; "-" without a figure. */
export function verdict(value: number | null | undefined, target: Target): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "-";
  const met =
    "atLeast" in target
      ? value >= target.atLeast
      : "atMost" in target
        ? value <= target.atMost
        : value < target.below;
  return `${value} (${met ? "met" : "NOT met"})`;
}

export function targetTable(rows: [name: string, value: number | null, target?: Target][]) {
  const row = ([name, value, target]: (typeof rows)[number]) =>
    target ? [name, targetText(target), verdict(value, target)] : [name, "-", value];
  return table([["figure", "target", "value"], ...rows.map(row)]);
}

/** "name count, name count", largest first; a count in `repeated` is added in brackets. */
export function byCount(counts: Record<string, number>, repeated?: Record<string, number>) {
  return Object.entries(counts)
    .sort(([, a], [, b]) => b - a)
    .map(([name, count]) => `${name} ${count}${repeated?.[name] ? ` (${repeated[name]})` : ""}`)
    .join(", ");
}

export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** `part / whole`, rounded; null when there is no whole. */
export const ratio = (part: number | undefined, whole: number | undefined, digits = 4) =>
  part !== undefined && whole ? round(part / whole, digits) : null;

/** The nearest-rank percentile of already sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  // The middle value, or the mean of the middle two.
  const [low, high] = [sorted[Math.ceil(sorted.length / 2) - 1]!, sorted[sorted.length >> 1]!];
  return low === high ? low : round((low + high) / 2, 3);
}

export function log(line: string): void {
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
}
