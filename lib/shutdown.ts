/**
 * How every long-running process (follow, worker, backfill, reindex, board, api) stops on
 * SIGTERM or SIGINT: `close` stops taking work, lets the current jobs or requests finish and
 * closes the pools; then the process exits 0. A close that outlasts the grace period is cut
 * short: the process exits anyway, and a job still running goes back to the queue once its
 * lock lapses (JOB_LOCK_MS), written in full or not at all, since a chunk is one transaction.
 * Installed before a process says it runs: a supervisor may signal as soon as it reads the line,
 * and a signal with no handler yet kills the process (exit 143).
 */
import type { Logger } from "pino";
import { config } from "./config.ts";

export function closeOnSignal(
  close: () => Promise<void>,
  { log, graceMs = config.shutdownGraceMs }: { log: Logger; graceMs?: number },
): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, graceMs }, "stopping: finishing current work");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const graceOver = new Promise<"grace over">((resolve) => {
      timer = setTimeout(() => resolve("grace over"), graceMs);
    });
    try {
      const outcome = await Promise.race([close().then(() => "closed" as const), graceOver]);
      if (outcome === "grace over") {
        log.warn({ graceMs }, "grace period over; unfinished jobs go back to the queue");
      }
    } catch (error) {
      log.warn({ err: error instanceof Error ? error.message : String(error) }, "close failed");
    } finally {
      clearTimeout(timer);
    }
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}
