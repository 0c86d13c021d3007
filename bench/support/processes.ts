/**
 * A benchmark's child processes (output in bench/results/logs/, stopped with SIGTERM), and what
 * /proc says of any process while it runs: memory and CPU time.
 */
import { mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { bunArgv } from "../../test/support/commands.ts";
import { RESULTS_DIR, round } from "./report.ts";

const LOG_DIR = join(RESULTS_DIR, "logs");
const REPO_ROOT = join(import.meta.dir, "..", "..");

export class ChildExited extends Error {
  override name = "ChildExited";
}

export type Child = ReturnType<typeof spawnBun>;

/**
 * Runs `bun <args>` from the repository root with `settings` added to the environment; within the
 * test suite (the benches' smoke tests) our commands come from its compiled binary, as the
 * suite's own children do (test/support/commands.ts).
 */
export function spawnBun(label: string, args: string[], settings: Record<string, string>) {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = join(LOG_DIR, `${label}-${Date.now()}.log`);
  const output = openSync(logFile, "w");
  const child = Bun.spawn(bunArgv(args), {
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
    logFile,
    rssBytes: () => statusBytes(child.pid, "VmRSS"),
    /** The most resident memory it ever held (the kernel's high-water mark), in bytes. */
    peakRssBytes: () => peakRssOf(child.pid),
    cpuSeconds: () => cpuSecondsOf(child.pid),
    assertAlive() {
      const code = child.exitCode ?? child.signalCode;
      if (exited()) throw new ChildExited(`${label} exited (${code}); see ${logFile}`);
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

/** A file under /proc, or "" when the process has ended since it was listed. */
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

/** utime + stime of /proc/<pid>/stat, at 100 clock ticks a second (0 once it has exited). */
export async function cpuSecondsOf(pid: number): Promise<number> {
  const stat = await procFile(`${pid}/stat`);
  // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return stat ? (Number(fields[11]) + Number(fields[12])) / 100 : 0;
}

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
