/**
 * A long-running process outlives a dropped connection, wherever the drop surfaces. The clients
 * reconnect by themselves (postgres.js opens a new connection for the next query, ioredis
 * reconnects), and a query that was in flight fails where it is awaited and is retried there.
 * But postgres.js also reports a drop where nobody awaits it: a session ended between queries
 * (57P01 after pg_terminate_backend, 57P02 when another backend is killed -9) rejects whatever
 * it held, and a socket reset can surface as an 'error' event with no listener. Either used to
 * end the process (1 of 38 backend kills ended a worker with `read ECONNRESET`). Here such a
 * connection failure is one warning per burst, and the process goes on; any other uncaught
 * error still ends it with exit 1, as it did. See docs/decisions/dropped-connections.md.
 */
import { isConnectionFailure } from "./connection-checks.ts";
import { redactSecrets } from "./error-cause.ts";
import { errorSummary, logger } from "./log.ts";

/** Drops within this long of the last warning are one burst (one outage, many sessions). */
const BURST_MS = 10_000;

let installed = false;

export function surviveDroppedConnections(): void {
  if (installed) return;
  installed = true;
  const log = logger("process");
  let warnedAt = 0;
  const caught = (kind: string) => (error: unknown) => {
    if (!isConnectionFailure(error)) {
      log.fatal({ err: errorSummary(error), kind }, "unexpected error; exiting");
      console.error(
        redactSecrets(error instanceof Error ? (error.stack ?? error.message) : String(error)),
      );
      process.exit(1);
    }
    const now = Date.now();
    if (now - warnedAt < BURST_MS) return;
    warnedAt = now;
    log.warn(
      { err: errorSummary(error), kind },
      "a connection dropped outside any request; it reconnects, the process goes on",
    );
  };
  process.on("unhandledRejection", caught("unhandled rejection"));
  process.on("uncaughtException", caught("uncaught exception"));
}
