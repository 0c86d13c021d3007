/**
 * A worker's CPU by thread, from /proc/<pid>/task/<tid>/stat: what the JavaScript itself costs
 * (the main thread) apart from what Bun and JavaScriptCore spend beside it: the JIT compiling
 * (and recompiling) the hot functions, the garbage collector's helpers, the allocator's page
 * scavenger, fetch's HTTP thread. The JIT's share is paid by every worker process and is heaviest
 * in its first chunks, so a short backfill's CPU per event is higher than a long one's, and more
 * workers spend more on it in all (measured at load 2-6: 0.6-0.75 s of one worker's 20k run,
 * 1.7-2.0 s of its 100k run, 2.5-3.5 s over 2 and 4 workers at 100k).
 */
import { readdir } from "node:fs/promises";

export type ThreadRole = "main" | "jit" | "gc" | "allocator" | "http" | "other";

/** Thread names (the kernel keeps 15 characters) by what they do. */
const ROLES: [RegExp, ThreadRole][] = [
  [/^JITWorker/, "jit"],
  [/^Heap ?Helper|Collector/i, "gc"],
  [/^mi-/, "allocator"],
  [/^HTTP Client/, "http"],
];

const CLOCK_TICKS = 100;

const noCpu = (): Record<ThreadRole, number> => ({
  main: 0,
  jit: 0,
  gc: 0,
  allocator: 0,
  http: 0,
  other: 0,
});

/** CPU seconds so far of every thread of `pid`, summed by role (zeros once it has exited). */
export async function threadCpuOf(pid: number): Promise<Record<ThreadRole, number>> {
  const cpu = noCpu();
  let tids: string[];
  try {
    tids = await readdir(`/proc/${pid}/task`);
  } catch {
    return cpu;
  }
  for (const tid of tids) {
    try {
      const stat = await Bun.file(`/proc/${pid}/task/${tid}/stat`).text();
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      // Fields after the parenthesised name; utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const seconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
      const role =
        tid === String(pid)
          ? "main"
          : (ROLES.find(([pattern]) => pattern.test(name))?.[1] ?? "other");
      cpu[role] += seconds;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return cpu;
}

/** The CPU seconds by role that `pids` used between `before` and now, summed over them. */
export async function threadCpuSince(
  pids: number[],
  before: Record<ThreadRole, number>[],
): Promise<Record<ThreadRole, number>> {
  const after = await Promise.all(pids.map(threadCpuOf));
  const total = noCpu();
  after.forEach((threads, i) => {
    for (const role of Object.keys(total) as ThreadRole[]) {
      total[role] += threads[role] - (before[i]?.[role] ?? 0);
    }
  });
  for (const role of Object.keys(total) as ThreadRole[])
    total[role] = Math.round(total[role] * 100) / 100;
  return total;
}
