/**
 * The health records: how each job of a role ended, written where `status` and /readyz see it,
 * counted in the metrics, and outages of Postgres and the node reported once each instead of
 * once per failing job. Takes its dependencies, so it can be built alone.
 */
import { UnrecoverableError } from "bullmq";
import type { Logger } from "pino";
import { isConnectionFailure } from "../../lib/connection-checks.ts";
import { errorSummary } from "../../lib/log.ts";
import { createOutageReporter } from "../../lib/outages.ts";
import { isTransientRpcFailure } from "../../lib/rpc-failures.ts";
import { withTimeout } from "../../lib/with-timeout.ts";
import { StakerLogsUnsettled } from "../chain/block-receipts.ts";
import { ReadReverted } from "../chain/call-failure.ts";
import { ChainMismatch } from "../chain/chain-id.ts";
import { StakerLogsDisputed } from "../chain/check-node.ts";
import { LogRangeTooLarge } from "../chain/logs.ts";
import type { NodeBehind } from "../chain/node-behind.ts";
import type { LogCheck } from "../fetch/fetch-range.ts";
import { ChunkJobsParked } from "../follower/follow.ts";
import type { IndexerMetrics } from "../metrics.ts";
import { ReorgTooDeep } from "../reorg/fork-point.ts";
import { CheckpointMismatch, type IndexerRole, type IndexerStore } from "../store/index.ts";

/**
 * Errors no retry can fix: the job fails at once and says why. The follower's next scheduled tick
 * still tries again (StakerLogsUnsettled clears once the node serves matching receipts).
 */
const FATAL = [
  CheckpointMismatch,
  ReorgTooDeep,
  ChainMismatch,
  ReadReverted,
  LogRangeTooLarge,
  ChunkJobsParked,
  StakerLogsUnsettled,
  StakerLogsDisputed,
];
/**
 * How long a failure's health record may take before the job fails without it: a pool whose
 * connections all wait on a lock (an operator's, say) would otherwise hold the failing job, and
 * with it a follower's lease round, as long as the lock.
 */
const FAILURE_RECORD_MS = 5_000;

export const isFatal = (error: unknown) =>
  FATAL.some((kind) => error instanceof kind) &&
  !(error instanceof StakerLogsUnsettled && error.mayPass);

export interface HealthRecordsDeps {
  store: IndexerStore;
  metrics: IndexerMetrics;
  log: Logger;
}

export function createHealthRecords({ store, metrics, log }: HealthRecordsDeps) {
  // Jobs fail on every query while Postgres is away: one warning per outage, not one per job.
  const databaseOutages = createOutageReporter("DATABASE_URL", log);
  // Likewise while the node resets, times out or answers 5xx or 429; the jobs retry meanwhile.
  const rpcOutages = createOutageReporter("RPC_URL", log, isTransientRpcFailure);
  const nodeBehind = createNodeBehindReport(log);

  return {
    /** A job of `role` succeeded: its health is ok again and any outage it outlived is over. */
    async succeeded(
      role: IndexerRole,
      started: number,
      result: { events?: number; logCheck?: LogCheck },
    ) {
      await store.recordHealth(role, { ok: true });
      databaseOutages.recovered();
      rpcOutages.recovered();
      nodeBehind.caughtUp();
      metrics.jobFinished(role, (performance.now() - started) / 1000, result);
      if (result.logCheck) metrics.logsChecked(role, result.logCheck);
      if (role === "follow") metrics.unsettledBlock(undefined);
    },

    /**
     * A job of `role` waits for the node to have a block (NodeBehind). The role works, so its
     * health stays ok; the wait is said once in the logs and counted in the metrics.
     */
    async waited(role: IndexerRole, started: number, behind: NodeBehind) {
      await store.recordHealth(role, { ok: true });
      databaseOutages.recovered();
      rpcOutages.recovered();
      nodeBehind.behind(behind);
      metrics.waitedForNode(role);
      metrics.jobFinished(role, (performance.now() - started) / 1000, {});
    },

    /**
     * Records the failure where `status` and /readyz see it, then fails the job: fatal errors
     * stop its retries, the rest retry with the job's backoff.
     */
    async failed(role: IndexerRole, error: unknown, started: number): Promise<never> {
      const summary = errorSummary(error);
      if (isConnectionFailure(error)) databaseOutages.error(error);
      if (isTransientRpcFailure(error)) rpcOutages.error(error);
      metrics.jobFinished(role, (performance.now() - started) / 1000, {
        error: true,
        fatal: isFatal(error),
      });
      const unsettled = error instanceof StakerLogsUnsettled;
      if (role === "follow" && unsettled) metrics.unsettledBlock(error.blockNumber);
      if (role === "chunks" && (unsettled || error instanceof StakerLogsDisputed)) {
        metrics.chunkParkedOnLogs();
      }
      await withTimeout(
        store.recordHealth(role, { ok: false, error: summary, fatal: isFatal(error) }),
        FAILURE_RECORD_MS,
      ).catch(() => {});
      if (isFatal(error)) throw new UnrecoverableError(summary);
      const retryable = new Error(summary);
      retryable.name = error instanceof Error ? error.name : "Error";
      throw retryable;
    },

    /** Whether Postgres or the node is away (a failed job then needs no line of its own). */
    outage: () => databaseOutages.down() || rpcOutages.down(),
  };
}

export type HealthRecords = ReturnType<typeof createHealthRecords>;

/** A load balancer's backend a few blocks behind makes a short wait every few ticks. */
const NODE_BEHIND_LINE_INTERVAL_MS = 60_000;

/**
 * Waits for a node behind the blocks asked, said in the logs: a warning when a wait starts (at
 * most one a minute, with how many waits there were since the last), and a line when it ends.
 */
function createNodeBehindReport(log: Logger) {
  let waitingSince: number | undefined;
  let lineAt = Number.NEGATIVE_INFINITY;
  let waitsSinceLine = 0;
  let said = false;
  return {
    behind(error: NodeBehind) {
      waitsSinceLine += waitingSince === undefined ? 1 : 0;
      waitingSince ??= Date.now();
      if (said || Date.now() - lineAt < NODE_BEHIND_LINE_INTERVAL_MS) return;
      log.warn(
        {
          block: error.block.toString(),
          nodeHead: error.nodeHead?.toString(),
          waitsSinceLastLine: waitsSinceLine,
        },
        "the node at RPC_URL is behind the blocks asked for: waiting for it (no rollback)",
      );
      said = true;
      lineAt = Date.now();
      waitsSinceLine = 0;
    },
    caughtUp() {
      if (waitingSince === undefined) return;
      if (said) log.info({ waitedMs: Date.now() - waitingSince }, "the node at RPC_URL caught up");
      waitingSince = undefined;
      said = false;
    },
  };
}
