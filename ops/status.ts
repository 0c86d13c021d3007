/**
 * What `status` shows: gathered in one round of reads, rendered as aligned lines. Only reads:
 * the indexer it is given is opened read-only, so no Redis key is created.
 */
import type { Indexer } from "../indexer/indexer.ts";
import { isParked } from "../indexer/jobs/reconcile.ts";
import { redactSecrets } from "../lib/error-cause.ts";

export interface StatusSettings {
  queuePrefix: string;
  /** Unset: the node's finalized tag. */
  finalityDepth?: number;
}

export async function gatherStatus(indexer: Indexer) {
  const [tip, checkpoint, chunks, follows, failedChunks, lastFollowFailures, health, counts] =
    await Promise.all([
      indexer.chainTip(),
      indexer.store.checkpoint(),
      indexer.queues.chunks.getJobCounts("waiting", "active", "delayed", "failed"),
      indexer.queues.follow.getJobCounts("active", "failed"),
      indexer.queues.chunks.getFailed(0, 9),
      indexer.queues.follow.getFailed(0, 0),
      indexer.store.health(),
      indexer.store.counts(),
    ]);
  return {
    staker: indexer.contracts.staker,
    chainId: indexer.chainId,
    tip,
    checkpoint,
    chunks,
    follows,
    failedChunks,
    lastFollowFailure: lastFollowFailures[0],
    health,
    counts,
    followLease: await indexer.followLease(),
  };
}

export type Status = Awaited<ReturnType<typeof gatherStatus>>;

export function renderStatus(status: Status, settings: StatusSettings): string[] {
  const lines: string[] = [];
  const line = (label: string, value: string) => lines.push(`${label.padEnd(18)}${value}`);
  const { tip, checkpoint, chunks, follows, counts } = status;
  const indexed = checkpoint?.indexedBlock;
  const finality =
    settings.finalityDepth === undefined
      ? "the node's finalized tag"
      : `FINALITY_DEPTH ${settings.finalityDepth}`;
  line("staker", `${status.staker} (chain ${status.chainId})`);
  line("queue prefix", settings.queuePrefix);
  line("head", tip.head.toString());
  line("finalized", `${tip.finalized} (${finality}; chunk jobs index up to it)`);
  line("indexed block", indexed?.toString() ?? "none yet");
  line("lag", renderLag(tip.head, indexed));
  line("scheduled to", checkpoint?.scheduledBlock.toString() ?? "-");
  line(
    "chunk jobs",
    `waiting ${chunks.waiting}, active ${chunks.active}, delayed ${chunks.delayed}, failed ${chunks.failed}`,
  );
  for (const job of status.failedChunks) {
    const kind = isParked(job) ? "parked (fails for good)" : "failed (will be re-queued)";
    lines.push(`  ${job.id} ${kind}: ${job.failedReason}`);
  }
  line("follow jobs", `active ${follows.active}, failed ${follows.failed}`);
  line("leading follower", renderFollowLease(status.followLease));
  const lastFollowFailure = status.lastFollowFailure;
  if (lastFollowFailure) {
    const at = new Date(lastFollowFailure.finishedOn ?? lastFollowFailure.timestamp);
    lines.push(`  last failure ${at.toISOString()}: ${lastFollowFailure.failedReason}`);
  }
  for (const role of ["follow", "chunks"] as const) {
    const row = status.health.find((each) => each.component === role);
    const label = role === "follow" ? "follower" : "chunk workers";
    if (!row) line(label, "no report yet");
    else if (row.failingSince) {
      line(
        label,
        `FAILING since ${row.failingSince.toISOString()}${row.fatal ? " (needs an operator)" : ""}: ${row.lastError}`,
      );
    } else {
      const last = row.lastError
        ? `; last error ${row.lastErrorAt?.toISOString()}: ${row.lastError}`
        : "";
      line(label, `ok at ${row.okAt?.toISOString()}${last}`);
    }
  }
  line(
    "read failures",
    `${counts.readFailures} citizens with unreadable metadata, ${counts.staleMetadata} of them served with the name and image last read (list: read-failures)`,
  );
  line(
    "hand flags",
    `${counts.inferredHandClaims} inferred (contract-wallet stakes; the node has no trace API; settle with read-failures --retry once it has)`,
  );
  line(
    "configurations",
    `${counts.inferredConfigurations} inferred (reconfigured in the stake's block, and no read explains its points; list: read-failures)`,
  );
  line("rpc calls", renderRpcCalls(counts));
  // Failed jobs keep their error's own message (a node URL with its key, for viem's errors).
  return lines.map(redactSecrets);
}

/** The follow process holding the lease, and those ready to take it. */
function renderFollowLease({ leader, standbys }: Status["followLease"]): string {
  const name = (member: { host: string; pid: number }) => `${member.host} pid ${member.pid}`;
  const standing =
    standbys.length === 0 ? "no standby" : `standing by: ${standbys.map(name).join(", ")}`;
  if (!leader) {
    return `none (no follow process runs, or the leader just died and a standby takes over within FOLLOW_LEASE_MS); ${standing}`;
  }
  return `${name(leader)} (lease ${leader.leaseLeftMs} ms left); ${standing}`;
}

/** How far the indexer is behind the node's head, or the node behind the indexer. */
function renderLag(head: bigint, indexed: bigint | undefined): string {
  if (indexed === undefined) return "-";
  if (head >= indexed) return `${head - indexed} blocks`;
  return `the node is ${indexed - head} blocks behind the indexed block: the follower waits for it (nothing is rolled back on a node behind)`;
}

/** The calls every worker process made, against what is stored: the cost of indexing so far. */
function renderRpcCalls(counts: Status["counts"]): string {
  const methods = Object.entries(counts.rpcCalls).sort(([, a], [, b]) => b - a);
  if (methods.length === 0) return "none recorded yet";
  const total = methods.reduce((sum, [, calls]) => sum + calls, 0);
  const per = (calls: number, of: number) => (of > 0 ? (calls / of).toFixed(3) : "-");
  const ethCalls = counts.rpcCalls.eth_call ?? 0;
  const byMethod = methods.map(([method, calls]) => `${method} ${calls}`).join(", ");
  return `${total} (${per(total, counts.events)} per event); eth_call ${ethCalls} (${per(ethCalls, counts.citizenStakes)} per citizen stake); ${byMethod}`;
}
