import { decodeFunctionData, type Hex, type PublicClient } from "viem";
import type { ChunkWrite, IndexerStore } from "../../db/indexer-store.ts";
import type { CitizenRow, CitizenStakeRow, StakerEventRow } from "../../db/schema.ts";
import { type CitizenKey, readCitizens } from "../chain/citizen-reads.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import { fetchStakerLogs, type LogRangeGovernor } from "../chain/logs.ts";
import { readStakes } from "../chain/stake-reads.ts";
import { stakerAbi } from "../chain/staker-abi.ts";
import { type Season, toEventRow } from "../project/event-rows.ts";
import { AmbiguousHandClaim, buildCitizenStake, bytesBonus } from "../project/stake-facts.ts";

export interface RangeIndexerDeps {
  client: PublicClient;
  store: IndexerStore;
  contracts: StakerContracts;
  governor: LogRangeGovernor;
}

/** The chain moved under a fetch (a reorg near the head); the job retries on the new branch. */
export class ReorgDetected extends Error {
  override name = "ReorgDetected";
}

export interface IndexRangeRequest {
  from: bigint;
  to: bigint;
  /** Replace what the tables hold for the range instead of adding to it (operator reindex). */
  replace?: boolean;
  /**
   * Near the head a reorg can land between our calls: check every log's block hash against
   * the headers and link the range to the stored parent.
   */
  verifyHashes?: boolean;
}

/** Fetches a block range's staker events and everything they need, and writes it in one go. */
export async function indexRange(deps: RangeIndexerDeps, request: IndexRangeRequest) {
  const chunk = await fetchChunk(deps, request);
  const result = request.replace
    ? await deps.store.replaceChunk(chunk)
    : await deps.store.writeChunk(chunk);
  return { events: chunk.events.length, indexedBlock: result.indexedBlock };
}

export async function fetchChunk(
  deps: RangeIndexerDeps,
  request: IndexRangeRequest,
): Promise<ChunkWrite> {
  const { client, contracts } = deps;
  const { from, to } = request;
  const last = await client.getBlock({ blockNumber: to });
  const logs = await fetchStakerLogs(client, contracts.staker, from, to, deps.governor);
  const blockHashes = new Map<bigint, string>([[to, last.hash.toLowerCase()]]);
  for (const log of logs) blockHashes.set(log.blockNumber, log.blockHash);

  let parentHash: string | undefined;
  if (request.verifyHashes) {
    parentHash = await verifyAgainstHeaders(client, from, to, last.hash, blockHashes);
  }

  const events = logs.map((log) => toEventRow(log, contracts));
  const stakeEvents = events.filter(
    (event) =>
      event.event === "Stake" &&
      (event.assetType === "s1_citizen" || event.assetType === "s2_citizen"),
  );
  const citizens = await citizensOf(deps, stakeEvents, to);
  const stakes = await stakeFacts(deps, stakeEvents, events, citizens);
  return {
    fromBlock: from,
    toBlock: to,
    events,
    stakes,
    citizens: [...citizens.values()],
    blockHashes,
    parentHash,
  };
}

async function verifyAgainstHeaders(
  client: PublicClient,
  from: bigint,
  to: bigint,
  lastHash: Hex,
  seen: Map<bigint, string>,
): Promise<string> {
  const numbers = new Set([from, ...seen.keys()]);
  const headers = new Map(
    await Promise.all(
      [...numbers].map(
        async (blockNumber) => [blockNumber, await client.getBlock({ blockNumber })] as const,
      ),
    ),
  );
  for (const [number, hash] of seen) {
    if (headers.get(number)!.hash.toLowerCase() !== hash) {
      throw new ReorgDetected(`block ${number} changed while its logs were fetched`);
    }
  }
  if (headers.get(to)!.hash !== lastHash) throw new ReorgDetected(`block ${to} changed`);
  // Dense hashes near the head let a later reorg find its fork point within a block or two.
  const first = headers.get(from)!;
  seen.set(from, first.hash.toLowerCase());
  if (from > 0n) seen.set(from - 1n, first.parentHash.toLowerCase());
  return first.parentHash.toLowerCase();
}

const keyOf = (season: number, citizenId: bigint) => `${season}:${citizenId}`;

async function citizensOf(
  deps: RangeIndexerDeps,
  stakeEvents: StakerEventRow[],
  blockNumber: bigint,
): Promise<Map<string, CitizenRow>> {
  const keys = new Map<string, CitizenKey>();
  for (const event of stakeEvents) {
    const season = event.citizenSeason as Season;
    keys.set(keyOf(season, event.citizenId!), { season, citizenId: event.citizenId! });
  }
  const found = new Map<string, CitizenRow>();
  for (const row of await deps.store.knownCitizens([...keys.values()])) {
    found.set(keyOf(row.season, row.citizenId), row);
  }
  const missing = [...keys].filter(([key]) => !found.has(key)).map(([, key]) => key);
  // A citizen's components never change, so any block after its mint will do.
  for (const row of await readCitizens(deps.client, deps.contracts, missing, blockNumber)) {
    found.set(keyOf(row.season, row.citizenId), row);
  }
  return found;
}

async function stakeFacts(
  deps: RangeIndexerDeps,
  stakeEvents: StakerEventRow[],
  allEvents: StakerEventRow[],
  citizens: Map<string, CitizenRow>,
): Promise<CitizenStakeRow[]> {
  const reads = await readStakes(
    deps.client,
    deps.contracts,
    stakeEvents.map((event) => ({
      season: event.citizenSeason as Season,
      citizenId: event.citizenId!,
      staker: event.account as Hex,
      blockNumber: event.blockNumber,
      componentVaultId:
        citizens.get(keyOf(event.citizenSeason!, event.citizenId!))?.componentVaultId ?? 0n,
    })),
  );
  return Promise.all(
    stakeEvents.map(async (event, i) => {
      const input = {
        event,
        citizen: citizens.get(keyOf(event.citizenSeason!, event.citizenId!))!,
        reads: reads[i]!,
        laterBonusInBlock: laterBonusInBlock(event, allEvents),
      };
      try {
        return buildCitizenStake(input);
      } catch (error) {
        if (!(error instanceof AmbiguousHandClaim)) throw error;
        const handClaimFromCalldata = await handClaimOf(deps, event.transactionHash as Hex);
        return buildCitizenStake({ ...input, handClaimFromCalldata });
      }
    }),
  );
}

/** BYTES deposited into this stake after it in the same block: already in end-of-block points. */
function laterBonusInBlock(stake: StakerEventRow, events: StakerEventRow[]): bigint {
  let bonus = 0n;
  for (const event of events) {
    if (
      event.blockNumber === stake.blockNumber &&
      event.logIndex > stake.logIndex &&
      event.event === "Stake" &&
      event.assetType === "bytes" &&
      event.citizenSeason === stake.citizenSeason &&
      event.citizenId === stake.citizenId &&
      event.account === stake.account
    ) {
      bonus += bytesBonus(event.amountOrTokenId ?? 0n);
    }
  }
  return bonus;
}

/**
 * The Hand flag from the stake's calldata (its fifth word). A stake sent through another
 * contract hides it in an inner call; then no claim is assumed, which is what points said too.
 */
async function handClaimOf(deps: RangeIndexerDeps, transactionHash: Hex): Promise<boolean> {
  const transaction = await deps.client.getTransaction({ hash: transactionHash });
  if (transaction.to?.toLowerCase() !== deps.contracts.staker) return false;
  const call = decodeFunctionData({ abi: stakerAbi, data: transaction.input });
  return call.functionName === "stake" && call.args[4] === 1n;
}
