/**
 * The RPC report: a process with workers adds the JSON-RPC calls it made to `rpc_calls` every
 * few seconds and once when it closes, so `status` sums every process's calls. Takes its
 * dependencies, so it can be built alone.
 */
import type { Logger } from "pino";
import { isConnectionFailure } from "../../lib/connection-checks.ts";
import { errorSummary } from "../../lib/log.ts";
import type { IndexerMetrics } from "../metrics.ts";
import type { IndexerStore } from "../store/index.ts";

/** How often a process with workers adds its RPC calls to rpc_calls (and once when it closes). */
const RPC_REPORT_INTERVAL_MS = 5_000;

export interface RpcReportDeps {
  metrics: IndexerMetrics;
  store: IndexerStore;
  log: Logger;
}

export function createRpcReport({ metrics, store, log }: RpcReportDeps) {
  let timer: ReturnType<typeof setInterval> | undefined;
  // This process's calls already added to rpc_calls; reports run one at a time, so none counts
  // twice.
  let reported: Record<string, number> = {};
  let report: Promise<void> | undefined;

  function reportRpcCalls(): Promise<void> {
    // After the previous report, failed or not: a failed one leaves its calls for the next.
    const previous = (report ?? Promise.resolve()).catch(() => {});
    report = previous.then(async () => {
      const now = await metrics.rpcCalls();
      const added: Record<string, number> = {};
      for (const [method, calls] of Object.entries(now)) {
        added[method] = calls - (reported[method] ?? 0);
      }
      await store.addRpcCalls(added);
      reported = now;
    });
    return report;
  }

  return {
    start() {
      timer = setInterval(() => {
        reportRpcCalls().catch((error) => {
          // An outage is reported once elsewhere; its calls wait for the next report.
          if (isConnectionFailure(error)) return;
          log.warn({ err: errorSummary(error) }, "could not record this process's RPC calls");
        });
      }, RPC_REPORT_INTERVAL_MS);
    },

    stop() {
      clearInterval(timer);
      timer = undefined;
    },

    /** Adds the calls made since the last report (the last one, as the process closes). */
    async final() {
      await reportRpcCalls().catch((error) =>
        log.warn({ err: errorSummary(error) }, "could not record this process's RPC calls"),
      );
    },
  };
}
