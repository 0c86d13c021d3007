/**
 * The reconciler: every few seconds, in every process with workers, queues lost work again
 * (`requeueLostRanges`). Takes its dependencies, so it can be built alone.
 */
import type { Logger } from "pino";
import { errorSummary } from "../../lib/log.ts";
import type { Queues } from "../queues/queues.ts";
import type { IndexerStore } from "../store/index.ts";
import { requeueLostRanges } from "./reconcile.ts";

/** How often every process with workers looks for lost work (see requeueLostRanges). */
export const RECONCILE_INTERVAL_MS = 5_000;

export interface ReconcilerDeps {
  store: IndexerStore;
  queues: Queues;
  log: Logger;
  chunkSize: number;
}

export function createReconciler(deps: ReconcilerDeps) {
  const { chunkSize, log } = deps;
  let timer: ReturnType<typeof setInterval> | undefined;
  return {
    /** Re-queues lost work once (what every worker process does every few seconds). */
    once: () => requeueLostRanges(deps, chunkSize),

    start() {
      timer = setInterval(() => {
        requeueLostRanges(deps, chunkSize).catch((error) =>
          log.warn({ err: errorSummary(error) }, "could not check for lost chunk jobs"),
        );
      }, RECONCILE_INTERVAL_MS);
    },

    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
