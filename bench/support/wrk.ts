/**
 * wrk, the API bench's load, in its own process (inside the bench it would share its thread and
 * cap what it measures), drawing requests from a file at random (wrk-requests.lua).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

class WrkFailed extends Error {
  override name = "WrkFailed";
}

const SCRIPT = join(import.meta.dir, "wrk-requests.lua");

/** A request's path, and the ETag it sends as If-None-Match when set. */
export type WrkRequest = { path: string; ifNoneMatch?: string };

export type WrkResult = Awaited<ReturnType<typeof runWrk>>;

export async function writeRequests(file: string, requests: WrkRequest[]): Promise<string> {
  const lines = requests.map((request) => `${request.path}\t${request.ifNoneMatch ?? ""}\n`);
  await writeFile(file, lines.join(""));
  return file;
}

/** What a piped child wrote to stdout and stderr, and its exit code, once it exits. */
const outputOf = (child: Bun.Subprocess<"ignore", "pipe", "pipe">) =>
  Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);

export async function wrkVersion(): Promise<string> {
  const [out, err] = await outputOf(
    Bun.spawn(["wrk", "--version"], { stdin: "ignore", stdout: "pipe", stderr: "pipe" }),
  );
  return /wrk (\S+)/.exec(out + err)?.[1] ?? "unknown";
}

/** `duration` seconds of load on `base`, each request drawn from `requestsFile`. */
export async function runWrk(
  base: string,
  requestsFile: string,
  duration: number,
  { token, connections, threads }: { token: string; connections: number; threads: number },
) {
  if (!Bun.which("wrk")) {
    throw new WrkFailed("wrk is not installed; run scripts/bootstrap.sh (apt-get install wrk)");
  }
  const args = [`-t${threads}`, `-c${connections}`, `-d${duration}s`, "--timeout", "5s"];
  const child = Bun.spawn(["wrk", ...args, "-s", SCRIPT, base], {
    env: { ...process.env, TOKEN: token, REQUESTS_FILE: requestsFile },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await outputOf(child);
  const line = out.split("\n").find((text) => text.startsWith("{"));
  if (code !== 0 || !line) throw new WrkFailed(`wrk exited ${code}: ${err || out}`);
  const summary = JSON.parse(line) as Record<string, number>;
  const seconds = summary.durationUs! / 1e6;
  const usage = child.resourceUsage();
  const cpuSeconds = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 : 0;
  return {
    requestsPerSecond: Math.round(summary.requests! / seconds),
    requests: summary.requests!,
    seconds,
    p50Ms: summary.p50Us! / 1000,
    p99Ms: summary.p99Us! / 1000,
    maxMs: summary.maxUs! / 1000,
    /** Socket errors and timeouts. */
    errors: summary.connectErrors! + summary.readErrors! + summary.writeErrors! + summary.timeouts!,
    /** Answers with a status of 400 or more. */
    statusErrors: summary.statusErrors!,
    /** CPU wrk itself used, in cores (1 = one core all the time). */
    loaderCores: Math.round((cpuSeconds / seconds) * 100) / 100,
  };
}
