/**
 * The indexer's Prometheus metrics, one registry per indexer (tests build several in one
 * process). Counters are counted where things happen; the chain and table figures are read
 * when Prometheus scrapes, so every process (follow, worker, backfill) reports the same truth.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { withTimeout } from "../lib/with-timeout.ts";
import type { RpcObserver } from "./chain/client.ts";
import type { LogCheck } from "./fetch/fetch-range.ts";

/** What a scrape reads: the checkpoint, the chain tip, table counts and queue depths. */
export interface ScrapeSources {
  indexedBlock(): Promise<bigint | undefined>;
  chainTip(): Promise<{ head: bigint; finalized: bigint }>;
  counts(): Promise<{
    readFailures: number;
    staleMetadata: number;
    inferredHandClaims: number;
    inferredConfigurations: number;
  }>;
  queueCounts(): Promise<Record<string, Record<string, number>>>;
}

/** A scrape that waits longer for the node than this leaves the chain gauges out. */
const CHAIN_READ_TIMEOUT_MS = 2_000;

const PREFIX = "citizen_staking_";

export function createIndexerMetrics() {
  const registry = new Registry();
  const registers = [registry];

  const rpcRequests = new Counter({
    name: `${PREFIX}rpc_requests_total`,
    help: "JSON-RPC calls made to the node, by method (a batched call counts once, retries do not add)",
    labelNames: ["method"],
    registers,
  });
  const rpcErrors = new Counter({
    name: `${PREFIX}rpc_request_errors_total`,
    help: "JSON-RPC calls that failed after the transport's retries, by method",
    labelNames: ["method"],
    registers,
  });
  const rpcHttp = new Counter({
    name: `${PREFIX}rpc_http_responses_total`,
    help: "HTTP answers from the node, by status (one per attempt; a batch is one)",
    labelNames: ["status"],
    registers,
  });
  const eventsIndexed = new Counter({
    name: `${PREFIX}events_indexed_total`,
    help: "Staker events fetched and written by this process's jobs, by queue",
    labelNames: ["queue"],
    registers,
  });
  const jobDuration = new Histogram({
    name: `${PREFIX}job_duration_seconds`,
    help: "Time a job took, by queue and outcome (completed or failed)",
    labelNames: ["queue", "outcome"],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });
  const jobFailures = new Counter({
    name: `${PREFIX}job_failures_total`,
    help: "Jobs that failed, by queue and whether a retry can fix it (fatal=true parks the job)",
    labelNames: ["queue", "fatal"],
    registers,
  });
  const reorgRollbacks = new Counter({
    name: `${PREFIX}reorg_rollbacks_total`,
    help: "Rollbacks of indexed blocks that left the chain (reorgs)",
    registers,
  });
  const nodeBehindWaits = new Counter({
    name: `${PREFIX}node_behind_waits_total`,
    help: "Jobs that waited for the node to have a block it lacked (a node behind, not a reorg), by queue",
    labelNames: ["queue"],
    registers,
  });
  const reorgRemovedEvents = new Counter({
    name: `${PREFIX}reorg_removed_events_total`,
    help: "Staker events removed by rollbacks",
    registers,
  });

  const logChecks = new Counter({
    name: `${PREFIX}log_check_blocks_total`,
    help: "Blocks the missing-log check looked at closer, by queue and outcome: asked_again (by hash), receipts_checked (receipts matched the header's receiptsRoot), corrected (written as the check settled them, not as eth_getLogs gave them), disputed (the check node answered otherwise), parked (a chunk parked on a block nothing settles)",
    labelNames: ["queue", "outcome"],
    registers,
  });
  const unsettled = new Gauge({
    name: `${PREFIX}unsettled_block`,
    help: "The block the follower holds at because nothing settles its staker logs (no receipts matching its receiptsRoot); 0 when it holds at none",
    registers,
  });

  const followLeading = new Gauge({
    name: `${PREFIX}follow_leading`,
    help: "1 while this process holds the follower lease and runs the follower, else 0 (summed over the follow processes: 1, or 0 for up to FOLLOW_LEASE_MS after a leader dies)",
    registers,
  });

  let sources: ScrapeSources | undefined;
  const indexedBlock = new Gauge({
    name: `${PREFIX}indexed_block`,
    help: "The checkpoint: every table is complete up to this block",
    registers,
  });
  const nodeUp = new Gauge({
    name: `${PREFIX}node_up`,
    help: "1 when the node answered this scrape's head read within 2 s, else 0 (the chain gauges then keep their last values)",
    registers,
  });
  const headBlock = new Gauge({
    name: `${PREFIX}head_block`,
    help: "The node's latest block",
    registers,
  });
  const finalizedBlock = new Gauge({
    name: `${PREFIX}finalized_block`,
    help: "The finality boundary: the node's finalized block, or head - FINALITY_DEPTH",
    registers,
  });
  const lagBlocks = new Gauge({
    name: `${PREFIX}lag_blocks`,
    help: "Blocks between the node's head and the checkpoint",
    registers,
  });
  const nodeBehindBlocks = new Gauge({
    name: `${PREFIX}node_behind_blocks`,
    help: "Blocks the node's head is below the checkpoint (0 when it is not): the follower waits for it",
    registers,
  });
  const readFailures = new Gauge({
    name: `${PREFIX}read_failures`,
    help: "Citizen reads recorded as failed on data (rows of read_failures)",
    registers,
  });
  const staleMetadata = new Gauge({
    name: `${PREFIX}stale_metadata`,
    help: "Citizens whose tokenURI stopped reading, served with the name and image last read (counted in read_failures too)",
    registers,
  });
  const inferredHandClaims = new Gauge({
    name: `${PREFIX}inferred_hand_claims`,
    help: "S1 stakes whose Hand flag was inferred (the node has no trace API)",
    registers,
  });
  const inferredConfigurations = new Gauge({
    name: `${PREFIX}inferred_configurations`,
    help: "S1 stakes whose credit yield, identity points and vault multiplier were inferred (reconfigured in the stake's block; no read gives their points)",
    registers,
  });
  const queueJobs = new Gauge({
    name: `${PREFIX}queue_jobs`,
    help: "Jobs in each queue, by state",
    labelNames: ["queue", "state"],
    registers,
  });

  /**
   * Read at scrape time, each part on its own: an unreachable node sets node_up to 0 instead
   * of failing the whole scrape (a zero head would read as a huge lag or none at all).
   */
  async function collect() {
    if (!sources) return;
    const from = sources;
    const [indexed, tip, counts, queues] = await Promise.allSettled([
      from.indexedBlock(),
      withTimeout(from.chainTip(), CHAIN_READ_TIMEOUT_MS),
      from.counts(),
      from.queueCounts(),
    ]);
    const indexedValue = indexed.status === "fulfilled" ? indexed.value : undefined;
    if (indexedValue !== undefined) indexedBlock.set(Number(indexedValue));
    nodeUp.set(tip.status === "fulfilled" ? 1 : 0);
    if (tip.status === "fulfilled") {
      headBlock.set(Number(tip.value.head));
      finalizedBlock.set(Number(tip.value.finalized));
      if (indexedValue !== undefined) {
        lagBlocks.set(Number(tip.value.head - indexedValue));
        const behind = indexedValue - tip.value.head;
        nodeBehindBlocks.set(behind > 0n ? Number(behind) : 0);
      }
    }
    if (counts.status === "fulfilled") {
      readFailures.set(counts.value.readFailures);
      staleMetadata.set(counts.value.staleMetadata);
      inferredHandClaims.set(counts.value.inferredHandClaims);
      inferredConfigurations.set(counts.value.inferredConfigurations);
    }
    if (queues.status === "fulfilled") {
      queueJobs.reset();
      for (const [queue, states] of Object.entries(queues.value)) {
        for (const [state, count] of Object.entries(states)) queueJobs.set({ queue, state }, count);
      }
    }
  }

  const rpc: RpcObserver = {
    call: (method, outcome) => {
      rpcRequests.inc({ method });
      if (outcome === "error") rpcErrors.inc({ method });
    },
    httpResponse: (status) => rpcHttp.inc({ status: String(status) }),
  };

  return {
    registry,
    rpc,
    /** Called once the indexer's store, client and queues exist. */
    readAtScrape(scrapeSources: ScrapeSources) {
      sources = scrapeSources;
    },
    /** The text Prometheus scrapes, with the chain and table gauges read now. */
    async scrape() {
      await collect();
      return registry.metrics();
    },
    jobFinished(
      queue: string,
      seconds: number,
      result: { events?: number } | { error: true; fatal: boolean },
    ) {
      if ("error" in result) {
        jobDuration.observe({ queue, outcome: "failed" }, seconds);
        jobFailures.inc({ queue, fatal: String(result.fatal) });
        return;
      }
      jobDuration.observe({ queue, outcome: "completed" }, seconds);
      if (result.events) eventsIndexed.inc({ queue }, result.events);
    },
    /** JSON-RPC calls this process made so far, by method. */
    async rpcCalls(): Promise<Record<string, number>> {
      const { values } = await rpcRequests.get();
      return Object.fromEntries(values.map((value) => [String(value.labels.method), value.value]));
    },
    waitedForNode(queue: string) {
      nodeBehindWaits.inc({ queue });
    },
    /** What a job's missing-log check did (fetch/checked-logs.ts's LogCheck), in blocks. */
    logsChecked(queue: string, check: LogCheck) {
      logChecks.inc({ queue, outcome: "asked_again" }, check.askedAgain);
      logChecks.inc({ queue, outcome: "receipts_checked" }, check.receiptsChecked);
      logChecks.inc({ queue, outcome: "corrected" }, check.corrected);
      logChecks.inc({ queue, outcome: "disputed" }, check.disputed);
    },
    /** A chunk parked: nothing settles a block's staker logs (a dispute, unmatched receipts). */
    chunkParkedOnLogs() {
      logChecks.inc({ queue: "chunks", outcome: "parked" });
    },
    /** The block the follower holds at, or none. */
    unsettledBlock(blockNumber: bigint | undefined) {
      unsettled.set(blockNumber === undefined ? 0 : Number(blockNumber));
    },
    /** Whether this process runs the follower (holds the lease). */
    leading(leads: boolean) {
      followLeading.set(leads ? 1 : 0);
    },
    rolledBack(removedEvents: number) {
      reorgRollbacks.inc();
      reorgRemovedEvents.inc(removedEvents);
    },
  };
}

export type IndexerMetrics = ReturnType<typeof createIndexerMetrics>;
