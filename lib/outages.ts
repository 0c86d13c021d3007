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

/**
 * A service that answers but refuses writes until it has room again (Redis at `maxmemory` under
 * `noeviction`). Its connection stays up, so nothing says when it ends: `probe` is tried every
 * PROBE_INTERVAL_MS during such an outage, and its first success ends it.
 */
export interface Refusals {
  is(error: unknown): boolean;
  /** What the warning says the service does, after the variable: "is full (…)". */
  says(error: unknown): string;
  /** Resolves once the service takes writes again. */
  probe(): Promise<unknown>;
  /** Told once the service takes writes again (what paused meanwhile goes on). */
  resume?(): void;
}

/** How often a service that refuses writes is asked whether it takes them again. */
export const PROBE_INTERVAL_MS = 1_000;

/**
 * A failure this soon after an outage's end is that outage still settling, not a new one: a
 * Redis failover reaches a process's connections one by one, so the shared one may be ready
 * while a worker's blocking one still asks the sentinels. Warned of only if it lasts longer.
 */
export const SETTLE_MS = 5_000;

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
 * the service being away (for the node: isTransientRpcFailure); `refusals`, which are the
 * service refusing writes until it has room.
 */
export function createOutageReporter(
  variable: string,
  log: Logger,
  isOutage: (error: unknown) => boolean = isConnectionFailure,
  refusals?: Refusals,
  settleMs = SETTLE_MS,
): OutageReporter {
  let downSince: number | undefined;
  /** When the last outage that was warned of ended. */
  let endedAt = Number.NEGATIVE_INFINITY;
  /** Whether this outage was warned of (one starting within settleMs waits to be). */
  let warned = false;
  let settling: ReturnType<typeof setTimeout> | undefined;
  /** What the line that ends the outage says: the service is back, or takes writes again. */
  let back = "reachable again";
  let probing: ReturnType<typeof setInterval> | undefined;
  const probeUntilAccepted = (check: Refusals) => {
    let asking = false;
    probing = setInterval(() => {
      if (asking) return;
      asking = true;
      check
        .probe()
        .then(() => reporter.recovered())
        .catch(() => {})
        .finally(() => {
          asking = false;
        });
    }, PROBE_INTERVAL_MS);
    // A process stopping need not wait for the service to have room.
    probing.unref?.();
  };
  const reporter: OutageReporter = {
    watch(...sources) {
      for (const source of sources) source.on("error", (error) => reporter.error(error));
    },
    error(error) {
      if (downSince !== undefined) return;
      if (refusals?.is(error)) {
        downSince = Date.now();
        back = "takes writes again";
        warned = true;
        log.warn(
          { variable, cause: describeCause(error) },
          `${variable} ${refusals.says(error)}; retrying until it takes writes again`,
        );
        probeUntilAccepted(refusals);
        return;
      }
      if (!isOutage(error)) {
        log.error({ variable, err: describeCause(error) }, `${variable}: unexpected error`);
        return;
      }
      downSince = Date.now();
      back = "reachable again";
      const warn = () => {
        warned = true;
        log.warn(
          { variable, cause: describeCause(error) },
          `${variable} unreachable; retrying until it is back`,
        );
      };
      if (downSince - endedAt >= settleMs) return warn();
      warned = false;
      settling = setTimeout(warn, settleMs);
      // A process stopping need not wait to say it.
      settling.unref?.();
    },
    down: () => downSince !== undefined,
    recovered() {
      clearInterval(probing);
      probing = undefined;
      clearTimeout(settling);
      settling = undefined;
      if (downSince === undefined) return;
      if (back === "takes writes again") refusals?.resume?.();
      // An outage that settled unwarned ends unsaid too, and does not move the window: a
      // service that keeps failing again within it is warned of at the next failure past it.
      if (warned) {
        log.info({ variable, downMs: Date.now() - downSince }, `${variable} ${back}`);
        endedAt = Date.now();
      }
      downSince = undefined;
    },
  };
  return reporter;
}
