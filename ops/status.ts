/**
 * What `status` shows: each service's own state and what the ones that answer hold, gathered in
 * one round of reads and rendered as aligned lines. A service that cannot be read leaves only
 * its own lines unknown, and its line says why in one line: the node being down does not hide
 * the checkpoint, nor Redis the follower's health. Only reads: the queues are opened read-only,
 * so no Redis key is created.
 */
import type { ChainTip } from "../indexer/chain/finality.ts";
import type { readFollowLease } from "../indexer/follower/follow-lease.ts";
import type { Queues } from "../indexer/queues/queues.ts";
import { isParked, isWrittenChunk } from "../indexer/reconciler/reconcile.ts";
import type { IndexerStore } from "../indexer/store/index.ts";
import { redactSecrets } from "../lib/error-cause.ts";
import { failureLine } from "../lib/fail.ts";

export interface StatusSettings {
  queuePrefix: string;
  /** Unset: the node's finalized tag. */
  finalityDepth?: number;
}

/** Where each part of the status comes from; each is checked and read on its own. */
export interface StatusSources {
  staker: string;
  /** The chain the settings name, when they name one (shown while the node cannot say). */
  chainId?: number;
  /** The node checked against the settings (chain, staker, state the indexer reads), its tip. */
  node(): Promise<{ chainId: number; tip: ChainTip }>;
  store(): Promise<Pick<IndexerStore, "checkpoint" | "health" | "counts" | "missingRanges">>;
  queues(): Promise<
    Pick<Queues, "chunks" | "follow"> & { followLease(): ReturnType<typeof readFollowLease> }
  >;
}

/** What one service answered, or why it could not. */
export type Reading<T> = { ok: true; value: T } | { ok: false; error: unknown };

async function reading<T>(read: () => Promise<T>): Promise<Reading<T>> {
  try {
    return { ok: true, value: await read() };
  } catch (error) {
    return { ok: false, error };
  }
}

export async function gatherStatus(sources: StatusSources) {
  const [node, database, queues] = await Promise.all([
    reading(() => sources.node()),
    reading(async () => {
      const store = await sources.store();
      const [checkpoint, health, counts, gaps] = await Promise.all([
        store.checkpoint(),
        store.health(),
        store.counts(),
        store.missingRanges(),
      ]);
      return { checkpoint, health, counts, gaps };
    }),
    reading(async () => {
      const { chunks, follow, followLease } = await sources.queues();
      const [chunkCounts, followCounts, failedChunks, lastFollowFailures, lease] =
        await Promise.all([
          chunks.getJobCounts("waiting", "active", "delayed", "failed"),
          follow.getJobCounts("active", "failed"),
          chunks.getFailed(0, 9),
          follow.getFailed(0, 0),
          followLease(),
        ]);
      return {
        chunks: chunkCounts,
        follows: followCounts,
        failedChunks,
        lastFollowFailure: lastFollowFailures[0],
        followLease: lease,
      };
    }),
  ]);
  return { staker: sources.staker, chainId: sources.chainId, node, database, queues };
}

export type Status = Awaited<ReturnType<typeof gatherStatus>>;

/** Why each service that could not be read could not (each reads as one line). */
export function statusFailures(status: Status): unknown[] {
  return [status.node, status.database, status.queues].flatMap((read) =>
    read.ok ? [] : [read.error],
  );
}

export function renderStatus(status: Status, settings: StatusSettings): string[] {
  const lines: string[] = [];
  const line = (label: string, value: string) => lines.push(`${label.padEnd(18)}${value}`);
  const { node, database, queues } = status;
  const tip = node.ok ? node.value.tip : undefined;
  const checkpoint = database.ok ? database.value.checkpoint : undefined;
  const indexed = checkpoint?.indexedBlock;
  const finality =
    settings.finalityDepth === undefined
      ? "the node's finalized tag"
      : `FINALITY_DEPTH ${settings.finalityDepth}`;
  const unknown = (service: string) => `unknown (${service} cannot be read, above)`;
  const chainId = node.ok ? node.value.chainId : (checkpoint?.chainId ?? status.chainId);
  line("staker", `${status.staker} (chain ${chainId ?? "unknown"})`);
  line("queue prefix", settings.queuePrefix);
  const state = (read: Reading<unknown>) => (read.ok ? "ok" : `FAILED: ${failureLine(read.error)}`);
  line("node", state(node));
  line("postgres", state(database));
  line("redis", state(queues));
  line("head", tip ? tip.head.toString() : unknown("the node"));
  line(
    "finalized",
    tip ? `${tip.finalized} (${finality}; chunk jobs index up to it)` : unknown("the node"),
  );
  const lag = () => (tip ? renderLag(tip.head, indexed) : unknown("the node"));
  if (database.ok) {
    line("indexed block", indexed?.toString() ?? "none yet");
    line("lag", lag());
    line("scheduled to", checkpoint?.scheduledBlock.toString() ?? "-");
  } else {
    for (const label of ["indexed block", "lag", "scheduled to"]) line(label, unknown("postgres"));
  }
  if (queues.ok) {
    const { chunks, follows } = queues.value;
    line(
      "chunk jobs",
      `waiting ${chunks.waiting}, active ${chunks.active}, delayed ${chunks.delayed}, failed ${chunks.failed}`,
    );
    for (const job of queues.value.failedChunks) {
      // Which failed chunks are written needs Postgres; without it, none is said to be.
      const written = database.ok && isWrittenChunk(job, database.value.gaps);
      const kind = isParked(job)
        ? "parked (fails for good)"
        : written
          ? "done (its blocks are written; it failed after writing them)"
          : "failed (will be re-queued)";
      lines.push(`  ${job.id} ${kind}: ${job.failedReason}`);
    }
    line("follow jobs", `active ${follows.active}, failed ${follows.failed}`);
    line("leading follower", renderFollowLease(queues.value.followLease));
    const lastFollowFailure = queues.value.lastFollowFailure;
    if (lastFollowFailure) {
      const at = new Date(lastFollowFailure.finishedOn ?? lastFollowFailure.timestamp);
      lines.push(`  last failure ${at.toISOString()}: ${lastFollowFailure.failedReason}`);
    }
  } else {
    line("chunk jobs", unknown("redis"));
    line("follow jobs", unknown("redis"));
    line("leading follower", unknown("redis"));
  }
  if (!database.ok) {
    for (const label of ["follower", "chunk workers", "read failures", "hand flags", "rpc calls"])
      line(label, unknown("postgres"));
    return lines.map(redactSecrets);
  }
  const { health, counts } = database.value;
  for (const role of ["follow", "chunks"] as const) {
    const row = health.find((each) => each.component === role);
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
function renderFollowLease({
  leader,
  standbys,
}: Awaited<ReturnType<typeof readFollowLease>>): string {
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
function renderRpcCalls(counts: Awaited<ReturnType<IndexerStore["counts"]>>): string {
  const methods = Object.entries(counts.rpcCalls).sort(([, a], [, b]) => b - a);
  if (methods.length === 0) return "none recorded yet";
  const total = methods.reduce((sum, [, calls]) => sum + calls, 0);
  const per = (calls: number, of: number) => (of > 0 ? (calls / of).toFixed(3) : "-");
  const ethCalls = counts.rpcCalls.eth_call ?? 0;
  const byMethod = methods.map(([method, calls]) => `${method} ${calls}`).join(", ");
  return `${total} (${per(total, counts.events)} per event); eth_call ${ethCalls} (${per(ethCalls, counts.citizenStakes)} per citizen stake); ${byMethod}`;
}
