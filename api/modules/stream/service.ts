/**
 * The reads a stream needs, no HTTP: a wallet's rows now (with the block they reflect, in one
 * statement, so the two always agree) and its rows as they were after a block (a resume's
 * baseline).
 */
import { eq, max, sql } from "drizzle-orm";
import { stakedCitizensAt } from "../../../db/as-of.ts";
import type { Database } from "../../../db/client.ts";
import {
  blocks,
  indexerCheckpoints,
  type StakedCitizen,
  stakedCitizens,
} from "../../../db/schema.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import { fromDatabase } from "../../problems.ts";

export interface WalletState {
  /** Null before the first checkpoint. */
  indexedBlock: bigint | null;
  /** The indexed block's hash as the indexer stored it (null when it has none). */
  blockHash: string | null;
  citizens: StakedCitizen[];
}

/** `primary`: the primary, when `db` is a standby of it. */
export function createStreamService(db: Database, primary?: Database) {
  const checkpoint = indexedBlockSource(db);
  const current = db
    .with(checkpoint)
    .select({
      indexedBlock: checkpoint.indexedBlock,
      blockHash: blocks.hash,
      citizen: stakedCitizens,
    })
    .from(checkpoint)
    .leftJoin(blocks, eq(blocks.number, checkpoint.indexedBlock))
    .leftJoin(stakedCitizens, eq(stakedCitizens.staker, sql.placeholder("wallet")))
    .prepare("stream_wallet_citizens");
  const primaryBlock = primary
    ?.select({ indexedBlock: max(indexerCheckpoints.indexedBlock) })
    .from(indexerCheckpoints)
    .prepare("stream_primary_block");

  return {
    /** `wallet` lowercase. */
    async now(wallet: string): Promise<WalletState> {
      const rows = await fromDatabase(current.execute({ wallet }));
      return {
        indexedBlock: rows[0]?.indexedBlock ?? null,
        blockHash: rows[0]?.blockHash ?? null,
        citizens: rows.flatMap((row) => (row.citizen ? [row.citizen] : [])),
      };
    },
    /**
     * Whether the primary has indexed `block`; false without a standby, and when the primary does
     * not answer (the stream then starts over, as it would without a standby).
     */
    async primaryHolds(block: bigint): Promise<boolean> {
      if (!primaryBlock) return false;
      const [row] = await primaryBlock.execute().catch(() => []);
      return row?.indexedBlock != null && row.indexedBlock >= block;
    },
    /** The stored hash of a block; undefined once pruned (HASHES_KEPT below the checkpoint). */
    async hashOf(block: bigint): Promise<string | undefined> {
      const [row] = await fromDatabase(
        db.select({ hash: blocks.hash }).from(blocks).where(eq(blocks.number, block)),
      );
      return row?.hash;
    },
    /** The wallet's rows after block `at` (at most the indexed block), from the event log. */
    at(wallet: string, at: bigint): Promise<StakedCitizen[]> {
      return fromDatabase(stakedCitizensAt(db, at, wallet));
    },
  };
}

export type StreamService = ReturnType<typeof createStreamService>;
