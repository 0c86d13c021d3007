/**
 * Long-running processes keep retrying a lost connection (ioredis reconnects by itself, BullMQ
 * waits for it). Each retry raises an 'error' event; with no listener BullMQ prints a stack per
 * retry. This reports an outage once when it starts and once when it ends.
 */
import type { Logger } from "pino";
import { isConnectionFailure } from "./connection-checks.ts";
import { describeCause } from "./error-cause.ts";

export interface ErrorSource {
  on(event: "error", listener: (error: Error) => void): unknown;
}

export interface OutageReporter {
  /** Listens to the sources' 'error' events. */
  watch(...sources: ErrorSource[]): void;
  /** An 'error' event: a warning when it starts an outage, nothing during one. */
  error(error: unknown): void;
  /** The connection is back (ioredis 'ready'): one line when an outage ends. */
  recovered(): void;
  /** Whether an outage is going on (failures during it need no line of their own). */
  down(): boolean;
}

/**
 * `variable` names the setting an operator checks (REDIS_URL). `isOutage` says which errors are
 * the service being away (for the node: isTransientRpcFailure).
 */
export function createOutageReporter(
  variable: string,
  log: Logger,
  isOutage: (error: unknown) => boolean = isConnectionFailure,
): OutageReporter {
  let downSince: number | undefined;
  const reporter: OutageReporter = {
    watch(...sources) {
      for (const source of sources) source.on("error", (error) => reporter.error(error));
    },
    error(error) {
      if (downSince !== undefined) return;
      if (!isOutage(error)) {
        log.error({ variable, err: describeCause(error) }, `${variable}: unexpected error`);
        return;
      }
      downSince = Date.now();
      log.warn(
        { variable, cause: describeCause(error) },
        `${variable} unreachable; retrying until it is back`,
      );
    },
    down: () => downSince !== undefined,
    recovered() {
      if (downSince === undefined) return;
      log.info({ variable, downMs: Date.now() - downSince }, `${variable} reachable again`);
      downSince = undefined;
    },
  };
  return reporter;
}
