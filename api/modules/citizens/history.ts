/**
 * Reads as of a past block (`?block=N`): which blocks may be asked for, and which answers are
 * final. Both come from a one-row CTE that the as-of statements join, so the range, the data and
 * the token check still arrive in one round trip.
 *
 * The range starts at the first block with a staker event: the checkpoint does not keep the
 * start block it was created with (it starts at start − 1), and before the first event nothing
 * was staked, so that block is the earliest we can vouch for. It ends at the indexed block.
 */
import { max, sql } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { indexerCheckpoints, stakerEvents } from "../../../db/schema.ts";
import { BadParameter } from "../../problems.ts";

export function historySource(db: Database) {
  return db.$with("history").as(
    db
      .select({
        firstBlock: sql<
          bigint | null
        >`(select min(${stakerEvents.blockNumber}) from ${stakerEvents})`
          .mapWith(stakerEvents.blockNumber)
          .as("first_block"),
        finalizedBlock: max(indexerCheckpoints.finalizedBlock).as("finalized_block"),
      })
      .from(indexerCheckpoints),
  );
}

/** Postgres bigint: a larger block is surely past the indexed one, and is sent clamped. */
const BIGINT_MAX = 2n ** 63n - 1n;

export function blockParameter(block: bigint): string {
  return (block > BIGINT_MAX ? BIGINT_MAX : block).toString();
}

export interface History {
  firstBlock: bigint | null;
  indexedBlock: bigint | null;
  finalizedBlock: bigint | null;
}

/**
 * Throws BadParameter("block") unless `block` is in the indexed range; answers whether the
 * answer as of it is final (at or below the finality boundary the follower last saw).
 */
export function judgeBlock(block: bigint, history: History): { final: boolean } {
  const { firstBlock, indexedBlock, finalizedBlock } = history;
  if (firstBlock === null || indexedBlock === null || firstBlock > indexedBlock) {
    throw new BadParameter("block", `block ${block}: no block is available yet (nothing indexed)`);
  }
  if (block < firstBlock || block > indexedBlock) {
    throw new BadParameter(
      "block",
      `block ${block} is outside the indexed range: blocks ${firstBlock} to ${indexedBlock} are available`,
    );
  }
  return { final: finalizedBlock !== null && block <= finalizedBlock };
}
