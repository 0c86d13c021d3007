import { and, eq, inArray } from "drizzle-orm";
import type { Address, PublicClient } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { stakedCitizensAt } from "../db/as-of.ts";
import type { Database } from "../db/client.ts";
import { type StakedCitizen, stakedCitizens, stakerEvents } from "../db/schema.ts";
import type { StakerContracts } from "../indexer/chain/contracts.ts";
import { readUnbatched } from "../indexer/chain/unbatched-read.ts";
import { CITIZEN_ASSETS } from "../lib/vocabulary.ts";

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

const DIVISOR = 10_000n;

/** The API contract's invariants, which hold for any row the projection writes. */
export function invariantProblems(row: StakedCitizen): string[] {
  const problems: string[] = [];
  if (row.season === 1) {
    const base =
      ((row.identityPoints ?? 0n) * (row.vaultMultiplier ?? 0n) * row.timelockMultiplier) / DIVISOR;
    if (base + row.bytesPoints !== row.totalPoints) {
      problems.push(`S1 points ${row.totalPoints} != ${base} + ${row.bytesPoints}`);
    }
  } else if (row.timelockMultiplier + row.bytesPoints !== row.totalPoints) {
    problems.push(`S2 points ${row.totalPoints} != ${row.timelockMultiplier} + ${row.bytesPoints}`);
  }
  return problems;
}

/**
 * Compares what the tables say is staked with the staker's own views at block `at`:
 * getStakerPositions for the set of citizens, and every stored field against its getter.
 */
export async function verifyAgainstChain(input: {
  client: PublicClient;
  db: Database;
  contracts: StakerContracts;
  at: bigint;
  wallets: string[];
  /** Check the tables' history (staked_citizens_at) at `at` instead of the live projection. */
  asOf?: boolean;
}): Promise<Mismatch[]> {
  const { client, db, contracts, at, wallets } = input;
  const mismatches: Mismatch[] = [];
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
  const rows = input.asOf
    ? (await stakedCitizensAt(db, at)).filter((row) => wanted.has(row.staker))
    : wallets.length
      ? await db.select().from(stakedCitizens).where(inArray(stakedCitizens.staker, wallets))
      : [];
  const byWallet = new Map<string, Map<string, StakedCitizen>>();
  for (const row of rows) {
    const own = byWallet.get(row.staker) ?? new Map<string, StakedCitizen>();
    own.set(`${row.season}:${row.citizenId}`, row);
    byWallet.set(row.staker, own);
  }

  wallets.forEach((wallet, i) => {
    const position = positions[i]!;
    const stored = byWallet.get(wallet) ?? new Map<string, StakedCitizen>();
    const report = (
      season: number,
      citizenId: bigint,
      field: string,
      tables: unknown,
      chain: unknown,
    ) =>
      mismatches.push({
        wallet,
        season,
        citizenId: citizenId.toString(),
        field,
        tables: String(tables),
        chain: String(chain),
      });
    const check = (
      season: number,
      citizen: { citizenId: bigint; stakedBytes: bigint; timelockEndTime: bigint; points: bigint },
      seasonFields: (row: StakedCitizen) => Array<[string, unknown, unknown]>,
    ) => {
      const key = `${season}:${citizen.citizenId}`;
      const row = stored.get(key);
      if (!row) {
        report(season, citizen.citizenId, "staked", "absent", "staked");
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
        if (tables !== chain) report(season, citizen.citizenId, field, tables, chain);
      }
      for (const problem of invariantProblems(row)) {
        report(season, citizen.citizenId, "invariant", problem, "holds");
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
      report(row.season, row.citizenId, "staked", "staked", "absent");
  });
  return mismatches;
}
