/**
 * Our commands run as an operator runs them: `bun <script>` from the repository root, or the
 * compiled binary of the same tree in its place (below), with settings in the environment, output
 * captured. One-shot commands are awaited; long-running ones are watched line by line and stopped
 * with SIGTERM.
 */
import { join } from "node:path";
import { LOADED_MACHINE_MS } from "./time.ts";

const REPO_ROOT = join(import.meta.dir, "..", "..");

/**
 * The compiled binary of this tree (scripts/build-binary.sh) that scripts/test.sh builds before a
 * run and names in CS_TEST_BINARY. A `bun scripts/cli.ts` child transpiles every module it loads
 * before its first line of work; the binary starts from code bundled ahead. The suite starts a few
 * hundred such children on two cores, so they come from the binary; a file run alone (no
 * CS_TEST_BINARY) runs them from source.
 */
const TEST_BINARY = process.env.CS_TEST_BINARY || undefined;

/**
 * Where a command's code comes from. `source` keeps a command on `bun <script>` whatever the run
 * built: for tests about that way itself.
 */
export interface From {
  source?: boolean;
}

/**
 * The argv that runs `bun <args>`: from the test binary when there is one and `args` name one of
 * its entry points (`scripts/cli.ts <command>`, or `api/main.ts`, its `api` command), from
 * source otherwise.
 */
export function bunArgv(args: string[], from: From = {}): string[] {
  const [script, ...rest] = args;
  if (TEST_BINARY && !from.source) {
    if (script === "scripts/cli.ts") return [TEST_BINARY, ...rest];
    if (script === "api/main.ts") return [TEST_BINARY, "api", ...rest];
  }
  return [process.execPath, ...args];
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs `bun <args>` (or the binary in its place: bunArgv) to its end (killed after `timeoutMs`)
 * and returns what it printed.
 */
export function runCommand(
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 2 * LOADED_MACHINE_MS,
  from: From = {},
): Promise<CommandResult> {
  return runProcess(bunArgv(args, from), ourCommand(env), timeoutMs);
}

/** Where and with what environment `bun <script>` runs: the repository root, ours added. */
function ourCommand(env: Record<string, string | undefined>): SpawnPlace {
  return { cwd: REPO_ROOT, env: { ...process.env, ...env } };
}

/** Where a process runs and its whole environment (nothing inherited). */
export interface SpawnPlace {
  cwd: string;
  env: Record<string, string | undefined>;
}

/** Runs any executable to its end (killed after `timeoutMs`) and returns what it printed. */
export async function runProcess(
  argv: string[],
  place: SpawnPlace,
  timeoutMs = 30_000,
): Promise<CommandResult> {
  const started = performance.now();
  const child = Bun.spawn(argv, {
    ...place,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(timer);
  return { code, stdout, stderr, ms: performance.now() - started };
}

/** A long-running command whose output lines (stdout and stderr together) can be awaited. */
export function startCommand(
  args: string[],
  env: Record<string, string | undefined>,
  from: From = {},
) {
  return startProcess(bunArgv(args, from), ourCommand(env));
}

/** Any long-running executable, watched line by line like `startCommand`'s. */
export function startProcess(argv: string[], place: SpawnPlace) {
  const child = Bun.spawn(argv, {
    ...place,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines: string[] = [];
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of stream) {
      partial += decoder.decode(chunk, { stream: true });
      const complete = partial.split("\n");
      partial = complete.pop() ?? "";
      lines.push(...complete.filter((line) => line !== ""));
    }
    if (partial) lines.push(partial);
  };
  const drained = Promise.all([collect(child.stdout), collect(child.stderr)]);
  return {
    child,
    lines,
    /** Resolves with the first line matching `pattern`; rejects after `timeoutMs` or on exit. */
    async waitForLine(pattern: RegExp, timeoutMs = LOADED_MACHINE_MS): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((line) => pattern.test(line));
        if (found) return found;
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(
            `no line matching ${pattern} (exit code ${child.exitCode}); output:\n${lines.join("\n")}`,
          );
        }
        await Bun.sleep(25);
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const code = await child.exited;
      await drained;
      return code;
    },
  };
}
