/**
 * `verify`: the tables against the chain at a block. The chain side and the comparison are here;
 * the table side, read in one snapshot, is verify-tables.ts.
 */
import type { Address, PublicClient } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import type { Database } from "../db/client.ts";
import { indexerCheckpoints, type StakedCitizen } from "../db/schema.ts";
import { createBlockReads } from "../indexer/chain/block-reads.ts";
import type { StakerContracts } from "../indexer/chain/contracts.ts";
import { NodeBehind } from "../indexer/chain/node-behind.ts";
import { s1BasePoints } from "../lib/vocabulary.ts";
import { citizenKey, escrowedCitizens } from "./escrow.ts";
import { NothingIndexed, readTables, stakeKey, type TableSide } from "./verify-tables.ts";

export { citizenStakers, NothingIndexed } from "./verify-tables.ts";

export interface Mismatch {
  wallet: string;
  season: number;
  citizenId: string;
  field: string;
  tables: string;
  chain: string;
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

/** What verify compares at a block, on either side. */
interface VerifyInput {
  client: PublicClient;
  db: Database;
  contracts: StakerContracts;
  /** The wallets whose positions are read; absent: every wallet the tables or the escrow name. */
  wallets?: string[];
  /** Check the tables' history (staked_citizens_at) at the block instead of the live projection. */
  asOf?: boolean;
  /** Also derive the staked set from the citizens' Transfer logs from block `from` to the block. */
  escrow?: { from: bigint; maxLogRange: number };
}

/**
 * Compares what the tables say is staked with the chain at block `at`: the staker's own views
 * (getStakerPositions for the set of citizens, and every stored field against its getter), and,
 * with `escrow`, the citizens the staker holds by the citizen contracts' Transfer logs, so a
 * stake missing from the tables altogether is found too. With `asOf` the tables are read as they
 * stood after `at` (staked_citizens_at), so activity indexed between the chain reads and the
 * table reads is no false alarm, and the live rows the API serves are checked against that
 * rule at the checkpoint; otherwise the live projection is read. Either way, every live row's
 * stored record that the API would serve is checked against what its columns make. Every table
 * read is made in one snapshot, and the chain is asked about the block by its stored hash when
 * the tables keep one.
 */
export async function verifyAgainstChain(input: VerifyInput & { at: bigint }): Promise<Mismatch[]> {
  return compareWithChain(input, await readTables(input, { at: input.at }));
}

/** What `verify` finds at the block it compared, and which block that was. */
export interface Verified {
  at: bigint;
  mismatches: Mismatch[];
}

/** Times verify reads again when the block it chose is not the node's (yet, or any longer). */
const VERIFY_ATTEMPTS = 3;

/** How long a node's head must stay where it is for verify to read at it (a quiet chain). */
const QUIET_HEAD_MS = 2_000;

/**
 * `verify` on a live system: the tables at the newest block they had reached that is settled on
 * the node, read in one snapshot with the checkpoint (rows the follower writes meanwhile are not
 * seen), and the chain at that very block, by its stored hash. Settled: below the node's head
 * while the chain moves, since a node can answer a read at its head from the block it is
 * building (anvil does while it mines the next one, by number and by hash alike), and the head
 * is the block a reorg replaces first; the head itself once it has stayed put for a while (a
 * quiet devnet), checked again after the reads. A node that lacks the block (behind, or the
 * block left its chain) is asked again at a new one.
 */
export async function verifyAtCheckpoint(input: VerifyInput): Promise<Verified> {
  const asOf = { ...input, asOf: true };
  for (let attempt = 1; ; attempt++) {
    const { head, quiet } = await settledHead(input);
    const tables = await readTables(asOf, { atMost: quiet ? head : head - 1n });
    try {
      const mismatches = await compareWithChain(asOf, tables);
      if (tables.at < head || (await headAfterReads(input.client)) === head) {
        return { at: tables.at, mismatches };
      }
      if (attempt === VERIFY_ATTEMPTS) {
        throw new ChainUnsettled(
          `a block was mined while verify read block ${tables.at}, the node's head, ${attempt} times; run verify again`,
        );
      }
    } catch (error) {
      if (!(error instanceof NodeBehind) || attempt === VERIFY_ATTEMPTS) throw error;
    }
  }
}

/** Every block verify chose moved under its reads: nothing it read can be trusted. */
class ChainUnsettled extends Error {
  override name = "ChainUnsettled";
}

/**
 * The node's head, and whether it stayed put: it is watched until it moves or passes the
 * checkpoint, for QUIET_HEAD_MS at most.
 */
async function settledHead(input: VerifyInput): Promise<{ head: bigint; quiet: boolean }> {
  const [checkpoint] = await input.db
    .select({ indexedBlock: indexerCheckpoints.indexedBlock })
    .from(indexerCheckpoints);
  if (!checkpoint) throw new NothingIndexed("nothing indexed yet");
  const first = await input.client.getBlockNumber();
  let head = first;
  const deadline = Date.now() + QUIET_HEAD_MS;
  while (head === first && head <= checkpoint.indexedBlock && Date.now() < deadline) {
    await Bun.sleep(100);
    head = await input.client.getBlockNumber();
  }
  return { head, quiet: head === first && head <= checkpoint.indexedBlock };
}

/** The node's head a moment after reads at its head: a block mined during them shows by then. */
async function headAfterReads(client: PublicClient): Promise<bigint> {
  await Bun.sleep(500);
  return client.getBlockNumber();
}

async function compareWithChain(input: VerifyInput, tables: TableSide): Promise<Mismatch[]> {
  const { client, contracts } = input;
  const { at, blockHash } = tables;
  const mismatches: Mismatch[] = [];
  const escrow = input.escrow
    ? await escrowedCitizens(client, contracts, { ...input.escrow, to: at })
    : undefined;
  const wallets =
    input.wallets ??
    [
      ...new Set([...tables.stakers, ...[...(escrow?.values() ?? [])].map((held) => held.wallet)]),
    ].sort();
  // A wallet's whole positions outgrow the batches' answers: one eth_call each.
  const blockReads = createBlockReads(client, { batching: "alone" });
  const positions = await Promise.all(
    wallets.map((wallet) =>
      blockReads.read({
        address: contracts.staker,
        abi: stakerAbi,
        functionName: "getStakerPositions",
        args: [wallet as Address],
        blockNumber: at,
        blockHash,
      }),
    ),
  );
  const wanted = new Set(wallets);
  const allRows = tables.rows;
  const rows = allRows.filter((row) => wanted.has(row.staker));
  const { inferred } = tables;
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
    tableValue: unknown,
    chain: unknown,
  ) => {
    reported.add(citizenKey(season, citizenId));
    mismatches.push({
      wallet,
      season,
      citizenId: citizenId.toString(),
      field,
      tables: String(tableValue),
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
    for (const row of tables.drift) {
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
  // The records the API serves as stored, against what their rows' columns make.
  for (const row of tables.staleRecords) {
    report(
      row.staker,
      row.season,
      row.citizenId,
      "record",
      "stored record differs",
      "the record its columns make",
    );
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
