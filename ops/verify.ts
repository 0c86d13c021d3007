import { and, eq, inArray, sql } from "drizzle-orm";
import type { Address, PublicClient } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { stakedCitizensAt } from "../db/as-of.ts";
import type { Database } from "../db/client.ts";
import { citizenStakes, type StakedCitizen, stakedCitizens, stakerEvents } from "../db/schema.ts";
import type { StakerContracts } from "../indexer/chain/contracts.ts";
import { readUnbatched } from "../indexer/chain/unbatched-read.ts";
import { CITIZEN_ASSETS, s1BasePoints } from "../lib/vocabulary.ts";
import { citizenKey, escrowedCitizens } from "./escrow.ts";

export interface Mismatch {
  wallet: string;
  season: number;
  citizenId: string;
  field: string;
  tables: string;
  chain: string;
}

/** Wallets that ever staked a citizen: the ones whose positions the tables claim to know. */
export async function citizenStakers(db: Database): Promise<string[]> {
  const rows = await db
    .selectDistinct({ account: stakerEvents.account })
    .from(stakerEvents)
    .where(
      and(eq(stakerEvents.event, "Stake"), inArray(stakerEvents.assetType, [...CITIZEN_ASSETS])),
    );
  return rows.map((row) => row.account).sort();
}

/**
 * The API contract's invariants, which hold for any row the projection writes. verifyAgainstChain
 * leaves them out for a stake whose configuration is inferred: its figures are the end of its
 * block's, which do not give its points (reconfigured in that block), and the API says so.
 */
export function invariantProblems(row: StakedCitizen): string[] {
  const problems: string[] = [];
  if (row.season === 1) {
    const base = s1BasePoints(
      row.identityPoints ?? 0n,
      row.vaultMultiplier ?? 0n,
      row.timelockMultiplier,
    );
    if (base + row.bytesPoints !== row.totalPoints) {
      problems.push(`S1 points ${row.totalPoints} != ${base} + ${row.bytesPoints}`);
    }
  } else if (row.timelockMultiplier + row.bytesPoints !== row.totalPoints) {
    problems.push(`S2 points ${row.totalPoints} != ${row.timelockMultiplier} + ${row.bytesPoints}`);
  }
  return problems;
}

/**
 * Compares what the tables say is staked with the chain at block `at`: the staker's own views
 * (getStakerPositions for the set of citizens, and every stored field against its getter), and,
 * with `escrow`, the citizens the staker holds by the citizen contracts' Transfer logs, so a
 * stake missing from the tables altogether is found too. With `asOf` the tables are read as they
 * stood after `at` (staked_citizens_at), so activity indexed between the chain reads and the
 * table reads is no false alarm, and the live rows the API serves are checked against that
 * rule at the checkpoint; otherwise the live projection is read.
 */
export async function verifyAgainstChain(input: {
  client: PublicClient;
  db: Database;
  contracts: StakerContracts;
  at: bigint;
  /** The wallets whose positions are read; absent: every wallet the tables or the escrow name. */
  wallets?: string[];
  /** Check the tables' history (staked_citizens_at) at `at` instead of the live projection. */
  asOf?: boolean;
  /** Also derive the staked set from the citizens' Transfer logs from block `from` to `at`. */
  escrow?: { from: bigint; maxLogRange: number };
}): Promise<Mismatch[]> {
  const { client, db, contracts, at } = input;
  const mismatches: Mismatch[] = [];
  const escrow = input.escrow
    ? await escrowedCitizens(client, contracts, { ...input.escrow, to: at })
    : undefined;
  const wallets =
    input.wallets ??
    [
      ...new Set([
        ...(await citizenStakers(db)),
        ...[...(escrow?.values() ?? [])].map((held) => held.wallet),
      ]),
    ].sort();
  const positions = await Promise.all(
    wallets.map((wallet) =>
      readUnbatched(client, {
        address: contracts.staker,
        abi: stakerAbi,
        functionName: "getStakerPositions",
        args: [wallet as Address],
        blockNumber: at,
      }),
    ),
  );
  const wanted = new Set(wallets);
  const allRows = input.asOf
    ? await stakedCitizensAt(db, at)
    : escrow
      ? await db.select().from(stakedCitizens)
      : wallets.length
        ? await db.select().from(stakedCitizens).where(inArray(stakedCitizens.staker, wallets))
        : [];
  const rows = allRows.filter((row) => wanted.has(row.staker));
  const inferred = await inferredConfigurations(db);
  const byWallet = new Map<string, Map<string, StakedCitizen>>();
  for (const row of rows) {
    const own = byWallet.get(row.staker) ?? new Map<string, StakedCitizen>();
    own.set(citizenKey(row.season, row.citizenId), row);
    byWallet.set(row.staker, own);
  }
  const reported = new Set<string>();
  const report = (
    wallet: string,
    season: number,
    citizenId: bigint,
    field: string,
    tables: unknown,
    chain: unknown,
  ) => {
    reported.add(citizenKey(season, citizenId));
    mismatches.push({
      wallet,
      season,
      citizenId: citizenId.toString(),
      field,
      tables: String(tables),
      chain: String(chain),
    });
  };

  wallets.forEach((wallet, i) => {
    const position = positions[i]!;
    const stored = byWallet.get(wallet) ?? new Map<string, StakedCitizen>();
    const check = (
      season: number,
      citizen: { citizenId: bigint; stakedBytes: bigint; timelockEndTime: bigint; points: bigint },
      seasonFields: (row: StakedCitizen) => Array<[string, unknown, unknown]>,
    ) => {
      const key = citizenKey(season, citizen.citizenId);
      const row = stored.get(key);
      if (!row) {
        report(wallet, season, citizen.citizenId, "staked", "absent", "staked");
        return;
      }
      stored.delete(key);
      const fields: Array<[string, unknown, unknown]> = [
        ["stakedBytes", row.stakedBytes, citizen.stakedBytes],
        ["timelockEndTime", row.timelockEndTime, citizen.timelockEndTime],
        ["points", row.totalPoints, citizen.points],
        ...seasonFields(row),
      ];
      for (const [field, tables, chain] of fields) {
        if (tables !== chain) report(wallet, season, citizen.citizenId, field, tables, chain);
      }
      if (inferred.has(stakeKey(row.stakeBlockNumber, row.stakeLogIndex))) return;
      for (const problem of invariantProblems(row)) {
        report(wallet, season, citizen.citizenId, "invariant", problem, "holds");
      }
    };
    for (const citizen of position.stakedS1Citizens) {
      check(1, citizen, (row) => [
        ["stakedVaultId", row.stakedVaultId, citizen.stakedVaultId],
        ["hasVault", row.hasVault, citizen.hasVault],
      ]);
    }
    for (const citizen of position.stakedS2Citizens) check(2, citizen, () => []);
    for (const row of stored.values())
      report(wallet, row.season, row.citizenId, "staked", "staked", "absent");
  });

  if (input.asOf) {
    // The rows the API serves, against the rule they were projected by.
    for (const row of await projectionDrift(db)) {
      report(
        row.staker,
        row.season,
        BigInt(row.citizen_id),
        "projection",
        row.columns,
        "staked_citizens_at(the checkpoint) differs",
      );
    }
  }
  if (escrow) {
    // What the staker's views did not already show: the tables against the escrow itself.
    const tableRows = new Map(allRows.map((row) => [citizenKey(row.season, row.citizenId), row]));
    for (const [key, held] of escrow) {
      const row = tableRows.get(key);
      if (row?.staker === held.wallet || reported.has(key)) continue;
      report(
        held.wallet,
        held.season,
        held.citizenId,
        "escrow",
        row ? `staked by ${row.staker}` : "absent",
        `held by the staker since ${held.transactionHash}`,
      );
    }
    for (const [key, row] of tableRows) {
      if (escrow.has(key) || reported.has(key)) continue;
      report(row.staker, row.season, row.citizenId, "escrow", "staked", "not held by the staker");
    }
  }
  return mismatches;
}

const stakeKey = (blockNumber: bigint, logIndex: number) => `${blockNumber}:${logIndex}`;

/**
 * The stakes whose configuration figures are inferred: listed by read-failures, marked by the
 * API, and no mismatch (the chain cannot say what the stake read; its points are checked).
 */
async function inferredConfigurations(db: Database): Promise<Set<string>> {
  const rows = await db
    .select({ blockNumber: citizenStakes.blockNumber, logIndex: citizenStakes.logIndex })
    .from(citizenStakes)
    .where(eq(citizenStakes.configurationSource, "inferred"));
  return new Set(rows.map((row) => stakeKey(row.blockNumber, row.logIndex)));
}

/**
 * The live staked_citizens rows that differ from the rule at the checkpoint, with the columns
 * that differ: the live table is the projection at the checkpoint, and one statement reads both
 * in one snapshot, whatever the follower writes meanwhile.
 */
async function projectionDrift(db: Database) {
  return db.execute<{ staker: string; season: number; citizen_id: string; columns: string }>(sql`
    with checkpoint as (select indexed_block from indexer_checkpoints),
    fresh as (
      select f.* from checkpoint, staked_citizens_at(checkpoint.indexed_block) f
    )
    select coalesce(l.staker, f.staker) as staker, coalesce(l.season, f.season) as season,
      coalesce(l.citizen_id, f.citizen_id)::text as citizen_id,
      case
        when l.season is null then 'row absent from staked_citizens'
        when f.season is null then 'row only in staked_citizens'
        else (
          select string_agg(a.key, ', ' order by a.key)
          from jsonb_each(to_jsonb(l)) a join jsonb_each(to_jsonb(f)) b using (key)
          where a.value is distinct from b.value
        ) || ' differ'
      end as columns
    from staked_citizens l
    full join fresh f on f.season = l.season and f.citizen_id = l.citizen_id
    where l is distinct from f
  `);
}
