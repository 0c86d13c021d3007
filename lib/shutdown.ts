/**
 * How every long-running process (follow, worker, backfill, reindex, board, api) stops on
 * SIGTERM or SIGINT: `close` stops taking work, lets the current jobs or requests finish and
 * closes the pools; then the process exits 0. A close that outlasts the grace period is cut
 * short: the process exits anyway, and a job still running goes back to the queue once its
 * lock lapses (JOB_LOCK_MS), written in full or not at all, since a chunk is one transaction.
 *
 * The handlers are installed by `exitOnSignal` as the process starts, before it waits for any
 * service: a signal with no handler kills the process (exit 143), and a supervisor may signal a
 * process at any moment, as soon as it reads a line or while it still waits for Postgres. Until
 * `closeOnSignal` names what to close, nothing has been taken, and a signal exits 0 at once.
 */
import type { Logger } from "pino";
import { config } from "./config.ts";
import { logger } from "./log.ts";

interface Closing {
  close: () => Promise<void>;
  log: Logger;
  graceMs: number;
}

let closing: Closing | undefined;
let installed = false;
let stopping = false;

/** Installs the SIGTERM and SIGINT handlers: from now on either ends the process with 0. */
export function exitOnSignal(): void {
  if (installed) return;
  installed = true;
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

/** What a signal closes from now on (installing the handlers, if `exitOnSignal` has not). */
export function closeOnSignal(
  close: () => Promise<void>,
  { log, graceMs = config.shutdownGraceMs }: { log: Logger; graceMs?: number },
): void {
  closing = { close, log, graceMs };
  exitOnSignal();
}

async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (!closing) {
    logger("shutdown").info({ signal }, "stopping before start-up finished: nothing to finish");
    process.exit(0);
  }
  const { close, log, graceMs } = closing;
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
}
