import type { Database } from "../../../db/client.ts";
import { describeCause } from "../../../lib/error-cause.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import type { Readiness } from "./model.ts";

/** What readiness is judged on, gathered once per /readyz. */
export interface ReadinessFacts {
  database: "ok" | "unreachable";
  indexedBlock: bigint | null;
  rpc: "ok" | "unreachable" | "not configured";
  /** The node's failure in one line (never its URL: provider keys live there). */
  rpcFailure?: string;
  headBlock: bigint | null;
}

/**
 * Why the API is not ready, one rule per line; empty when it is. A new condition (the
 * follower failing) is a new fact and a new line here.
 */
export function notReadyReasons(facts: ReadinessFacts, maxLagBlocks: number): string[] {
  const reasons: string[] = [];
  const lag = lagOf(facts);
  if (facts.database === "unreachable") reasons.push("the database (DATABASE_URL) does not answer");
  else if (facts.indexedBlock === null) reasons.push("nothing indexed yet");
  if (facts.rpc === "unreachable")
    reasons.push(`the node (RPC_URL) does not answer: ${facts.rpcFailure ?? "no answer"}`);
  if (lag !== null && lag > maxLagBlocks)
    reasons.push(`the indexer is ${lag} blocks behind the head (at most ${maxLagBlocks})`);
  return reasons;
}

function lagOf({ headBlock, indexedBlock }: ReadinessFacts): number | null {
  return headBlock !== null && indexedBlock !== null ? Number(headBlock - indexedBlock) : null;
}

export function createHealthService(db: Database) {
  const checkpoint = indexedBlockSource(db);
  const indexedBlock = db
    .with(checkpoint)
    .select({ indexedBlock: checkpoint.indexedBlock })
    .from(checkpoint)
    .prepare("indexed_block");

  const service = {
    /** The checkpoint's block; throws when Postgres cannot be reached. */
    async indexedBlock(): Promise<bigint | null> {
      const [row] = await indexedBlock.execute();
      return row?.indexedBlock ?? null;
    },

    /** Gathers the facts (database and node asked at once) and judges them. */
    async readiness(options: {
      maxLagBlocks: number;
      chainHead?: () => Promise<bigint>;
    }): Promise<Readiness> {
      const [indexed, head] = await Promise.all([
        service.indexedBlock().then(
          (block) => ({ database: "ok" as const, block }),
          () => ({ database: "unreachable" as const, block: null }),
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
        rpc: head.rpc,
        rpcFailure: head.failure,
        headBlock: head.block,
      };
      const reasons = notReadyReasons(facts, options.maxLagBlocks);
      return {
        ready: reasons.length === 0,
        reasons,
        database: facts.database,
        rpc: facts.rpc,
        indexedBlock: facts.indexedBlock?.toString() ?? null,
        headBlock: facts.headBlock?.toString() ?? null,
        lagBlocks: lagOf(facts),
        maxLagBlocks: options.maxLagBlocks,
      };
    },
  };
  return service;
}

export type HealthService = ReturnType<typeof createHealthService>;
