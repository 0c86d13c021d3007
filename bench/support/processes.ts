/**
 * Child processes of a benchmark (indexer workers, API servers): started with their own
 * settings in the environment, their output kept in a log file under bench/results/logs/, their
 * memory and CPU time readable from /proc while they run, and stopped with SIGTERM.
 */
import { mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { RESULTS_DIR } from "./report.ts";

export const LOG_DIR = join(RESULTS_DIR, "logs");
const REPO_ROOT = join(import.meta.dir, "..", "..");

export class ChildExited extends Error {
  override name = "ChildExited";
}

export type Child = {
  label: string;
  pid: number;
  logFile: string;
  /** Resident memory now, in bytes (0 once it has exited). */
  rssBytes(): Promise<number>;
  /** The most resident memory it ever held (the kernel's high-water mark), in bytes. */
  peakRssBytes(): Promise<number>;
  /** User + system CPU seconds used so far. */
  cpuSeconds(): Promise<number>;
  /** Throws ChildExited if the process is gone. */
  assertAlive(): void;
  stop(): Promise<void>;
};

/** Runs `bun <args>` from the repository root with `settings` added to the environment. */
export function spawnBun(label: string, args: string[], settings: Record<string, string>): Child {
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
  return {
    label,
    pid: child.pid,
    logFile,
    rssBytes: () => rssOf(child.pid),
    peakRssBytes: () => peakRssOf(child.pid),
    cpuSeconds: () => cpuSecondsOf(child.pid),
    assertAlive() {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new ChildExited(
          `${label} exited (${child.exitCode ?? child.signalCode}); see ${logFile}`,
        );
      }
    },
    async stop() {
      process.off("exit", killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const escalate = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await child.exited;
      clearTimeout(escalate);
    },
  };
}

export function rssOf(pid: number): Promise<number> {
  return statusBytes(pid, "VmRSS");
}

/** VmHWM: the peak resident set since the process started, kept by the kernel. */
export function peakRssOf(pid: number): Promise<number> {
  return statusBytes(pid, "VmHWM");
}

async function statusBytes(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  try {
    const status = await Bun.file(`/proc/${pid}/status`).text();
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

const CLOCK_TICKS = 100;

export async function cpuSecondsOf(pid: number): Promise<number> {
  try {
    const stat = await Bun.file(`/proc/${pid}/stat`).text();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** CPU seconds of every process whose command name is `name` (e.g. all postgres backends). */
export async function cpuSecondsOfCommand(name: string): Promise<number> {
  const glob = new Bun.Glob("[0-9]*");
  let total = 0;
  for await (const pid of glob.scan({ cwd: "/proc", onlyFiles: false })) {
    try {
      const comm = (await Bun.file(`/proc/${pid}/comm`).text()).trim();
      if (comm === name) total += await cpuSecondsOf(Number(pid));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** Samples a child's RSS every 250 ms until `stop()`; returns the peak seen. */
export function trackPeakRss(child: Child) {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, await child.rssBytes());
      await Bun.sleep(250);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
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

export type CpuByRole = Awaited<ReturnType<typeof cpuByRole>>;

/** Cores each role kept busy between two readings (1 = one core all the time). */
export function coresBetween(before: CpuByRole, after: CpuByRole, seconds: number) {
  const cores = (key: keyof CpuByRole) =>
    Math.round(((after[key] - before[key]) / seconds) * 100) / 100;
  return {
    anvil: cores("anvil"),
    postgres: cores("postgres"),
    redis: cores("redis"),
    children: cores("children"),
    bench: cores("bench"),
  };
}
