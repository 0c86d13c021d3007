/**
 * The table side of `verify`: what the tables say is staked at a block, read in one snapshot
 * (ops/verify.ts compares it with the chain).
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Hex } from "viem";
import { RECORD_WRITER, storedRecord } from "../api/modules/citizens/record.ts";
import { stakedCitizensAt } from "../db/as-of.ts";
import type { Database } from "../db/client.ts";
import {
  blocks,
  citizenStakes,
  indexerCheckpoints,
  type StakedCitizen,
  stakedCitizens,
  stakerEvents,
} from "../db/schema.ts";
import { CITIZEN_ASSETS } from "../lib/vocabulary.ts";

/** What the table side needs to know of a comparison (VerifyInput's part). */
export interface TableQuery {
  db: Database;
  wallets?: string[];
  asOf?: boolean;
  escrow?: object;
}

/** The database, or a transaction on it: what the table side of verify reads through. */
type Reader = Pick<Database, "select" | "selectDistinct" | "execute">;

/** Wallets that ever staked a citizen: the ones whose positions the tables claim to know. */
export async function citizenStakers(db: Reader): Promise<string[]> {
  const rows = await db
    .selectDistinct({ account: stakerEvents.account })
    .from(stakerEvents)
    .where(
      and(eq(stakerEvents.event, "Stake"), inArray(stakerEvents.assetType, [...CITIZEN_ASSETS])),
    );
  return rows.map((row) => row.account).sort();
}

/** The checkpoint is missing: nothing has been indexed yet. */
export class NothingIndexed extends Error {
  override name = "NothingIndexed";
}

export type DriftRow = { staker: string; season: number; citizen_id: string; columns: string };

/** The table side of a comparison, read in one snapshot. */
export interface TableSide {
  at: bigint;
  /** The stored hash of `at`, when the tables keep it: the chain is asked about that block. */
  blockHash?: Hex;
  /** Wallets that ever staked a citizen (only when no wallets were given). */
  stakers: string[];
  rows: StakedCitizen[];
  /** Live rows that differ from the rule at the checkpoint (with asOf). */
  drift: DriftRow[];
  /** Live rows whose stored record is not what this writer makes of their columns. */
  staleRecords: StakedCitizen[];
  /** The stakes whose configuration figures are inferred (stakeKey). */
  inferred: Set<string>;
}

/**
 * Everything verify reads from the tables, in one read-only repeatable-read transaction: the
 * block (given, or the checkpoint up to `atMost`), its hash, the stakers, the rows and the
 * drift all come from one snapshot, whatever the follower commits meanwhile.
 */
export function readTables(
  input: TableQuery,
  block: { at: bigint } | { atMost: bigint },
): Promise<TableSide> {
  const { wallets, asOf, escrow } = input;
  return input.db.transaction(
    async (tx) => {
      const at = "at" in block ? block.at : await checkpointAtMost(tx, block.atMost);
      const [stored] = await tx
        .select({ hash: blocks.hash })
        .from(blocks)
        .where(eq(blocks.number, at));
      const stakers = wallets ? [] : await citizenStakers(tx);
      const rows = asOf
        ? await stakedCitizensAt(tx, at)
        : escrow || !wallets
          ? await tx.select().from(stakedCitizens)
          : wallets.length
            ? await tx.select().from(stakedCitizens).where(inArray(stakedCitizens.staker, wallets))
            : [];
      const drift = asOf ? await projectionDrift(tx) : [];
      const staleRecords = await recordDrift(tx);
      const inferred = await inferredConfigurations(tx);
      const blockHash = stored?.hash as Hex | undefined;
      return { at, blockHash, stakers, rows, drift, staleRecords, inferred };
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
}

/** The newest block the tables had reached, up to `atMost`. */
async function checkpointAtMost(tx: Reader, atMost: bigint): Promise<bigint> {
  const [checkpoint] = await tx
    .select({ indexedBlock: indexerCheckpoints.indexedBlock })
    .from(indexerCheckpoints);
  if (!checkpoint) throw new NothingIndexed("nothing indexed yet");
  return checkpoint.indexedBlock < atMost ? checkpoint.indexedBlock : atMost;
}

export const stakeKey = (blockNumber: bigint, logIndex: number) => `${blockNumber}:${logIndex}`;

/**
 * The stakes whose configuration figures are inferred: listed by read-failures, marked by the
 * API, and no mismatch (the chain cannot say what the stake read; its points are checked).
 */
async function inferredConfigurations(db: Reader): Promise<Set<string>> {
  const rows = await db
    .select({ blockNumber: citizenStakes.blockNumber, logIndex: citizenStakes.logIndex })
    .from(citizenStakes)
    .where(eq(citizenStakes.configurationSource, "inferred"));
  return new Set(rows.map((row) => stakeKey(row.blockNumber, row.logIndex)));
}

/**
 * The live staked_citizens rows that differ from the rule at the checkpoint, with the columns
 * that differ: the live table is the projection at the checkpoint, and one statement reads both
 * in one snapshot, whatever the follower writes meanwhile. The API's stored record is no part of
 * the rule (the projection writes it from the row's columns; the rule's rows have none).
 */
async function projectionDrift(db: Reader): Promise<DriftRow[]> {
  return db.execute<DriftRow>(sql`
    with checkpoint as (select indexed_block from indexer_checkpoints),
    live as (
      select s.season, s.citizen_id, s.staker,
        to_jsonb(s) - 'record' - 'record_writer' as columns
      from staked_citizens s
    ),
    fresh as (
      select f.season, f.citizen_id, f.staker,
        to_jsonb(f) - 'record' - 'record_writer' as columns
      from checkpoint, staked_citizens_at(checkpoint.indexed_block) f
    )
    select coalesce(l.staker, f.staker) as staker, coalesce(l.season, f.season) as season,
      coalesce(l.citizen_id, f.citizen_id)::text as citizen_id,
      case
        when l.season is null then 'row absent from staked_citizens'
        when f.season is null then 'row only in staked_citizens'
        else (
          select string_agg(a.key, ', ' order by a.key)
          from jsonb_each(l.columns) a join jsonb_each(f.columns) b using (key)
          where a.value is distinct from b.value
        ) || ' differ'
      end as columns
    from live l
    full join fresh f on f.season = l.season and f.citizen_id = l.citizen_id
    where l.columns is distinct from f.columns
  `);
}

/**
 * The live rows whose stored record this writer would not write from their columns: the API
 * serves such a record as it is, so one that went wrong is an answer that went wrong. Records of
 * another writer are not served (the API renders those rows), so they are not compared.
 */
async function recordDrift(db: Reader): Promise<StakedCitizen[]> {
  const rows = await db
    .select()
    .from(stakedCitizens)
    .where(eq(stakedCitizens.recordWriter, RECORD_WRITER));
  return rows.filter((row) => row.record !== storedRecord(row).record);
}
