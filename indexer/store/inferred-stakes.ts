/**
 * The store's inferred stakes: S1 stakes whose Hand flag or configuration figures were inferred
 * (the node had no trace API, or no figures explained the points), and a Hand flag settled later
 * from a trace. Part of `IndexerStore` (declared in index.ts); built from a database handle and
 * the writers' lock.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { type CitizenStakeRow, citizenStakes, stakerEvents } from "../../db/schema.ts";
import type { WriterDeps } from "./checkpoint.ts";
import { recompute } from "./projection.ts";

export interface InferredHandClaim {
  blockNumber: bigint;
  logIndex: number;
  transactionHash: string;
  citizenId: bigint;
  /** How many S1 stakes of this citizen its transaction made before it. */
  occurrence: number;
  vaultMultiplier: bigint;
}

/** An S1 stake whose figures do not give its points, as stored (the end of its block's). */
export type InferredConfiguration = Pick<
  CitizenStakeRow,
  | "blockNumber"
  | "logIndex"
  | "citizenId"
  | "creditYield"
  | "identityPoints"
  | "vaultMultiplier"
  | "timelockMultiplier"
  | "basePoints"
>;

export function createInferredStakes(
  db: Database,
  { locked, checkpoint, markDataChanged }: WriterDeps,
) {
  async function inferredHandClaims(): Promise<InferredHandClaim[]> {
    const earlier = sql`(
      select count(*)::int from ${stakerEvents} e
      where e.transaction_hash = ${stakerEvents.transactionHash}
        and e.block_number = ${stakerEvents.blockNumber}
        and e.event = 'Stake' and e.asset_type = 's1_citizen'
        and e.citizen_id = ${stakerEvents.citizenId}
        and e.log_index < ${stakerEvents.logIndex}
    )`;
    const rows = await db
      .select({
        blockNumber: citizenStakes.blockNumber,
        logIndex: citizenStakes.logIndex,
        transactionHash: stakerEvents.transactionHash,
        citizenId: citizenStakes.citizenId,
        occurrence: sql<number>`${earlier}`.mapWith(Number),
        vaultMultiplier: citizenStakes.vaultMultiplier,
      })
      .from(citizenStakes)
      .innerJoin(
        stakerEvents,
        and(
          eq(stakerEvents.blockNumber, citizenStakes.blockNumber),
          eq(stakerEvents.logIndex, citizenStakes.logIndex),
        ),
      )
      .where(eq(citizenStakes.handClaimSource, "inferred"))
      .orderBy(asc(citizenStakes.blockNumber), asc(citizenStakes.logIndex));
    return rows.map((row) => ({ ...row, vaultMultiplier: row.vaultMultiplier ?? 0n }));
  }

  async function inferredConfigurations(): Promise<InferredConfiguration[]> {
    return db
      .select({
        blockNumber: citizenStakes.blockNumber,
        logIndex: citizenStakes.logIndex,
        citizenId: citizenStakes.citizenId,
        creditYield: citizenStakes.creditYield,
        identityPoints: citizenStakes.identityPoints,
        vaultMultiplier: citizenStakes.vaultMultiplier,
        timelockMultiplier: citizenStakes.timelockMultiplier,
        basePoints: citizenStakes.basePoints,
      })
      .from(citizenStakes)
      .where(eq(citizenStakes.configurationSource, "inferred"))
      .orderBy(asc(citizenStakes.blockNumber), asc(citizenStakes.logIndex));
  }

  async function settleHandClaim(
    stake: { blockNumber: bigint; logIndex: number },
    settled: { claim: boolean; vaultMultiplier: bigint },
  ): Promise<boolean> {
    return locked(async (tx) => {
      const updated = await tx
        .update(citizenStakes)
        .set({
          handClaim: settled.claim,
          handClaimSource: "trace",
          vaultMultiplier: settled.vaultMultiplier,
        })
        .where(
          and(
            eq(citizenStakes.blockNumber, stake.blockNumber),
            eq(citizenStakes.logIndex, stake.logIndex),
            eq(citizenStakes.handClaimSource, "inferred"),
          ),
        )
        .returning({ season: citizenStakes.season, citizenId: citizenStakes.citizenId });
      if (updated.length === 0) return false;
      await recompute(tx, updated, (await checkpoint(tx))!.indexedBlock);
      await markDataChanged(tx);
      return true;
    });
  }

  return { inferredHandClaims, inferredConfigurations, settleHandClaim };
}
