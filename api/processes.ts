/**
 * API_PROCESSES on one host: the first API process (slot 0) listens, then starts the others
 * (slots 1..N-1) as copies of its own command, each listening on the same port with SO_REUSEPORT
 * so the kernel spreads connections between them. Nothing is shared in memory: each process has
 * its own pools, response cache and LISTEN connection (so every one hears each indexed block and
 * revocation), and its own name for the stream leases (modules/stream/instances.ts).
 *
 * The first process supervises: a process that exits while it runs is started again in its slot,
 * and its stop (SIGTERM, SIGINT) stops the others. Each other process holds a pipe from it on
 * stdin and stops as on SIGTERM when the pipe closes, so a first process killed -9 leaves none
 * running.
 */
import type { Subprocess } from "bun";
import type { Logger } from "pino";

/** A process that lived this long before it exited is restarted after RESTART_MS again. */
const STEADY_MS = 30_000;
const RESTART_MS = 500;
/** Restarts of a process that keeps exiting at once back off up to this. */
const MAX_RESTART_MS = 30_000;

/**
 * The command that runs this process again: `bun <script> <arguments>`, or a compiled binary
 * with its arguments (its argv[1] is its embedded entry, which it adds itself). `--migrate` is
 * left out: the first process has migrated.
 */
export function ownCommand(): string[] {
  const compiled = Bun.main.startsWith("/$bunfs/");
  const script = compiled ? [] : [Bun.main];
  const args = process.argv.slice(2).filter((arg) => arg !== "--migrate");
  return [process.execPath, ...script, ...args];
}

export interface ApiProcesses {
  /** Stops supervising, asks every other process to stop, and resolves once all have exited. */
  stop(): Promise<void>;
}

/**
 * Starts slots 1..count-1 listening on `port` (the one the first process bound, which may have
 * been 0 = any), each restarted when it exits until `stop`.
 */
export function startApiProcesses({
  count,
  port,
  log,
  command = ownCommand(),
}: {
  count: number;
  port: number;
  log: Logger;
  command?: string[];
}): ApiProcesses {
  let stopping = false;
  const running = new Map<number, Subprocess>();
  const restartMs = new Map<number, number>();

  const start = (slot: number) => {
    const started = Date.now();
    const child = Bun.spawn(command, {
      env: { ...process.env, API_PROCESS_SLOT: String(slot), PORT: String(port) },
      // The pipe is never written: its end (this process gone) tells the child to stop.
      stdin: "pipe",
      stdout: "inherit",
      stderr: "inherit",
    });
    running.set(slot, child);
    log.info({ slot, pid: child.pid }, "api process started");
    void child.exited.then((code) => {
      running.delete(slot);
      if (stopping) return;
      const lived = Date.now() - started;
      const delay =
        lived >= STEADY_MS
          ? RESTART_MS
          : Math.min((restartMs.get(slot) ?? RESTART_MS / 2) * 2, MAX_RESTART_MS);
      restartMs.set(slot, delay);
      log.warn(
        { slot, pid: child.pid, code, signal: child.signalCode, restartInMs: delay },
        "api process exited; starting it again",
      );
      setTimeout(() => {
        if (!stopping) start(slot);
      }, delay);
    });
  };

  for (let slot = 1; slot < count; slot++) start(slot);

  return {
    async stop() {
      stopping = true;
      const children = [...running.values()];
      for (const child of children) child.kill("SIGTERM");
      await Promise.all(children.map((child) => child.exited));
    },
  };
}

/**
 * In a process the first one started: stop as on SIGTERM (lib/shutdown.ts) once the first one
 * is gone, which closes the stdin pipe it holds.
 */
export function stopWithFirstProcess(): void {
  void (async () => {
    const reader = Bun.stdin.stream().getReader();
    try {
      while (!(await reader.read()).done) {
        // Nothing is ever written; only the end matters.
      }
    } catch {
      // A read error is the pipe's end too.
    }
    process.kill(process.pid, "SIGTERM");
  })();
}
