/**
 * Child processes of a benchmark (indexer workers, followers, API servers): started with their
 * own settings in the environment, their output kept in a log file under bench/results/logs/,
 * stopped with SIGTERM; and what /proc says of any process while it runs: memory, CPU time, CPU
 * time by thread.
 */
import { mkdirSync, openSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { RESULTS_DIR, round } from "./report.ts";

const LOG_DIR = join(RESULTS_DIR, "logs");
const REPO_ROOT = join(import.meta.dir, "..", "..");
const CLOCK_TICKS = 100;

export class ChildExited extends Error {
  override name = "ChildExited";
}

export type Child = ReturnType<typeof spawnBun>;

/** Runs `bun <args>` from the repository root with `settings` added to the environment. */
export function spawnBun(label: string, args: string[], settings: Record<string, string>) {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = join(LOG_DIR, `${label}-${Date.now()}.log`);
  const output = openSync(logFile, "w");
  const child = Bun.spawn([process.execPath, ...args], {
    cwd: REPO_ROOT,
    // The child keeps PATH, HOME and the like, and reads its own settings through lib/config.ts.
    env: { ...process.env, ...settings },
    stdin: "ignore",
    stdout: output,
    stderr: output,
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    label,
    pid: child.pid,
    logFile,
    /** Its resident memory now, in bytes. */
    rssBytes: () => statusBytes(child.pid, "VmRSS"),
    /** The most resident memory it ever held (the kernel's high-water mark), in bytes. */
    peakRssBytes: () => peakRssOf(child.pid),
    /** User + system CPU seconds used so far. */
    cpuSeconds: () => cpuSecondsOf(child.pid),
    assertAlive() {
      if (exited()) {
        const code = child.exitCode ?? child.signalCode;
        throw new ChildExited(`${label} exited (${code}); see ${logFile}`);
      }
    },
    async stop() {
      process.off("exit", killOnExit);
      if (exited()) return;
      child.kill("SIGTERM");
      const escalate = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await child.exited;
      clearTimeout(escalate);
    },
  };
}

/** A file under /proc, or "" when the process (or thread) has ended since it was listed. */
const procFile = (path: string) =>
  Bun.file(`/proc/${path}`)
    .text()
    .catch(() => "");

async function statusBytes(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  const status = await procFile(`${pid}/status`);
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
}

/** VmHWM: the peak resident set since the process started, kept by the kernel. */
export const peakRssOf = (pid: number) => statusBytes(pid, "VmHWM");

/** utime + stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line, in seconds. */
function statCpuSeconds(stat: string): number {
  if (!stat) return 0;
  // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export const cpuSecondsOf = async (pid: number) => statCpuSeconds(await procFile(`${pid}/stat`));

/** CPU seconds of every process whose command name is `name` (e.g. all postgres backends). */
async function cpuSecondsOfCommand(name: string): Promise<number> {
  let total = 0;
  for await (const pid of new Bun.Glob("[0-9]*").scan({ cwd: "/proc", onlyFiles: false })) {
    if ((await procFile(`${pid}/comm`)).trim() === name) total += await cpuSecondsOf(Number(pid));
  }
  return total;
}

/** CPU seconds so far of the processes a benchmark runs against, by role. */
export async function cpuByRole(roles: { anvil?: number; children?: Child[] }) {
  const children = await Promise.all((roles.children ?? []).map((child) => child.cpuSeconds()));
  const self = process.cpuUsage();
  return {
    anvil: roles.anvil === undefined ? 0 : await cpuSecondsOf(roles.anvil),
    postgres: await cpuSecondsOfCommand("postgres"),
    redis: await cpuSecondsOfCommand("redis-server"),
    children: children.reduce((sum, seconds) => sum + seconds, 0),
    bench: (self.user + self.system) / 1e6,
  };
}

type CpuByRole = Awaited<ReturnType<typeof cpuByRole>>;

/** Cores each role kept busy between two readings (1 = one core all the time). */
export function coresBetween(before: CpuByRole, after: CpuByRole, seconds: number) {
  const roles = Object.keys(before) as (keyof CpuByRole)[];
  return Object.fromEntries(
    roles.map((role) => [role, round((after[role] - before[role]) / seconds, 2)]),
  ) as CpuByRole;
}

/**
 * A process's CPU by thread, from /proc/<pid>/task/<tid>/stat: what the JavaScript itself costs
 * (the main thread) apart from what Bun and JavaScriptCore spend beside it: the JIT compiling
 * (and recompiling) the hot functions, the garbage collector's helpers, the allocator's page
 * scavenger, fetch's HTTP thread. The JIT's share is paid by every worker process and is heaviest
 * in its first chunks, so a short backfill's CPU per event is higher than a long one's, and more
 * workers spend more on it in all (measured at load 2-6: 0.6-0.75 s of one worker's 20k run,
 * 1.7-2.0 s of its 100k run, 2.5-3.5 s over 2 and 4 workers at 100k).
 */
const THREAD_ROLES = ["main", "jit", "gc", "allocator", "http", "other"] as const;
type ThreadRole = (typeof THREAD_ROLES)[number];

/** Thread names (the kernel keeps 15 characters) by what they do. */
const THREAD_NAMES: [RegExp, ThreadRole][] = [
  [/^JITWorker/, "jit"],
  [/^Heap ?Helper|Collector/i, "gc"],
  [/^mi-/, "allocator"],
  [/^HTTP Client/, "http"],
];

/** CPU seconds so far of every thread of `pid`, summed by role (zeros once it has exited). */
export async function threadCpuOf(pid: number) {
  const cpu = Object.fromEntries(THREAD_ROLES.map((role) => [role, 0])) as Record<
    ThreadRole,
    number
  >;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const stat = await procFile(`${pid}/task/${tid}/stat`);
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const role = tid === String(pid) ? "main" : THREAD_NAMES.find(([p]) => p.test(name))?.[1];
    cpu[role ?? "other"] += statCpuSeconds(stat);
  }
  return cpu;
}

/** The CPU seconds by role that `pids` used between `before` and now, summed over them. */
export async function threadCpuSince(pids: number[], before: Record<ThreadRole, number>[]) {
  const after = await Promise.all(pids.map(threadCpuOf));
  const used = (role: ThreadRole) =>
    round(after.reduce((sum, threads, i) => sum + threads[role] - (before[i]?.[role] ?? 0), 0));
  return Object.fromEntries(THREAD_ROLES.map((role) => [role, used(role)])) as Record<
    ThreadRole,
    number
  >;
}
