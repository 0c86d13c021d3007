import { eq } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { indexerHealth } from "../../../db/schema.ts";
import { describeCause, redactSecrets } from "../../../lib/error-cause.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import type { Readiness } from "./model.ts";

/** What readiness is judged on, gathered once per /readyz. */
export interface ReadinessFacts {
  /** The database answers are read from: the replica when there is one. */
  database: "ok" | "unreachable";
  indexedBlock: bigint | null;
  /** The primary, when answers are read from a replica of it. */
  primary: "ok" | "unreachable" | "not configured";
  primaryIndexedBlock: bigint | null;
  rpc: "ok" | "unreachable" | "not configured";
  /** The node's failure in one line (never its URL: provider keys live there). */
  rpcFailure?: string;
  headBlock: bigint | null;
  /** The follower's own report (indexer_health); null before its first. */
  follower: FollowerReport | null;
}

export interface FollowerReport {
  failingSince: Date | null;
  lastError: string | null;
  fatal: boolean;
}

/**
 * A follower's failure counts once it lasts this long, or at once when no retry can fix it: a
 * node's passing hiccup must not take every API instance out of a load balancer together.
 */
export const FOLLOWER_FAILING_GRACE_MS = 10_000;

/**
 * Why the API is not ready, one rule per line; empty when it is. A new condition (the
 * follower failing) is a new fact and a new line here.
 */
export function notReadyReasons(
  facts: ReadinessFacts,
  maxLagBlocks: number,
  now = new Date(),
): string[] {
  const reasons: string[] = [];
  const lag = lagOf(facts);
  const replicaLag = replicaLagOf(facts);
  const read = facts.primary === "not configured" ? "DATABASE_URL" : "DATABASE_READ_URL";
  if (facts.database === "unreachable") reasons.push(`the database (${read}) does not answer`);
  else if (facts.indexedBlock === null) reasons.push("nothing indexed yet");
  // An unreachable primary alone is no reason: the replica still answers what it holds, and
  // with RPC_URL the lag to the head still judges how old that is.
  if (replicaLag !== null && replicaLag > maxLagBlocks)
    reasons.push(
      `the read replica (DATABASE_READ_URL) is ${replicaLag} blocks behind the primary (at most ${maxLagBlocks})`,
    );
  if (facts.rpc === "unreachable")
    reasons.push(`the node (RPC_URL) does not answer: ${facts.rpcFailure ?? "no answer"}`);
  if (lag !== null && lag > maxLagBlocks)
    reasons.push(`the indexer is ${lag} blocks behind the head (at most ${maxLagBlocks})`);
  if (followerFailing(facts.follower, now))
    reasons.push(
      // Recorded by another process, perhaps one that knew other URLs: redacted here too.
      `the follower is failing since ${facts.follower!.failingSince!.toISOString()}: ${redactSecrets(facts.follower!.lastError ?? "")}`,
    );
  return reasons;
}

function followerFailing(report: FollowerReport | null, now: Date): boolean {
  if (!report?.failingSince) return false;
  return report.fatal || now.getTime() - report.failingSince.getTime() > FOLLOWER_FAILING_GRACE_MS;
}

function lagOf({ headBlock, indexedBlock }: ReadinessFacts): number | null {
  return headBlock !== null && indexedBlock !== null ? Number(headBlock - indexedBlock) : null;
}

function replicaLagOf({ primaryIndexedBlock, indexedBlock }: ReadinessFacts): number | null {
  return primaryIndexedBlock !== null && indexedBlock !== null
    ? Number(primaryIndexedBlock - indexedBlock)
    : null;
}

/** The checkpoint's block in `db`; the query throws when Postgres cannot be reached. */
function indexedBlockOf(db: Database) {
  const checkpoint = indexedBlockSource(db);
  const statement = db
    .with(checkpoint)
    .select({ indexedBlock: checkpoint.indexedBlock })
    .from(checkpoint)
    .prepare("indexed_block");
  return async (): Promise<bigint | null> => {
    const [row] = await statement.execute();
    return row?.indexedBlock ?? null;
  };
}

/**
 * `db` is the database answers are read from; `primary`, when set, the primary it replicates,
 * whose checkpoint tells how far behind the replica is.
 */
export function createHealthService(db: Database, primary?: Database) {
  const indexedBlock = indexedBlockOf(db);
  const primaryIndexedBlock = primary && indexedBlockOf(primary);
  // The follower writes its report on the primary: a replica behind would show it late.
  const followerReport = (primary ?? db)
    .select({
      failingSince: indexerHealth.failingSince,
      lastError: indexerHealth.lastError,
      fatal: indexerHealth.fatal,
    })
    .from(indexerHealth)
    .where(eq(indexerHealth.component, "follow"))
    .prepare("follower_report");

  return {
    /** Gathers the facts (databases and node asked at once) and judges them. */
    async readiness(options: {
      maxLagBlocks: number;
      chainHead?: () => Promise<bigint>;
    }): Promise<Readiness> {
      const [indexed, primaryIndexed, follower, head] = await Promise.all([
        indexedBlock().then(
          (block) => ({ database: "ok" as const, block }),
          () => ({ database: "unreachable" as const, block: null }),
        ),
        primaryIndexedBlock
          ? primaryIndexedBlock().then(
              (block) => ({ primary: "ok" as const, block }),
              () => ({ primary: "unreachable" as const, block: null }),
            )
          : { primary: "not configured" as const, block: null },
        followerReport.execute().then(
          ([row]) => row ?? null,
          () => null,
        ),
        options.chainHead
          ? options.chainHead().then(
              (block) => ({ rpc: "ok" as const, block, failure: undefined }),
              (error: unknown) => ({
                rpc: "unreachable" as const,
                block: null,
                failure: describeCause(error, 200),
              }),
            )
          : { rpc: "not configured" as const, block: null, failure: undefined },
      ]);
      const facts: ReadinessFacts = {
        database: indexed.database,
        indexedBlock: indexed.block,
        primary: primaryIndexed.primary,
        primaryIndexedBlock: primaryIndexed.block,
        rpc: head.rpc,
        rpcFailure: head.failure,
        headBlock: head.block,
        follower,
      };
      const reasons = notReadyReasons(facts, options.maxLagBlocks);
      return {
        ready: reasons.length === 0,
        reasons,
        database: facts.database,
        rpc: facts.rpc,
        indexedBlock: facts.indexedBlock?.toString() ?? null,
        headBlock: facts.headBlock?.toString() ?? null,
        follower: !follower ? "no report" : follower.failingSince ? "failing" : "ok",
        lagBlocks: lagOf(facts),
        primary: facts.primary,
        replicaLagBlocks: replicaLagOf(facts),
        maxLagBlocks: options.maxLagBlocks,
      };
    },
  };
}

export type HealthService = ReturnType<typeof createHealthService>;
