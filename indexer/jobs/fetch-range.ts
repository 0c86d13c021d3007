import type { Block, Hex, PublicClient } from "viem";
import type { CitizenRow, CitizenStakeRow, StakerEventRow } from "../../db/schema.ts";
import { isCitizenAsset } from "../../lib/vocabulary.ts";
import { type CitizenKey, readCitizens } from "../chain/citizen-reads.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import { readHandFlag } from "../chain/hand-flag.ts";
import { fetchStakerLogs, type LogRangeGovernor } from "../chain/logs.ts";
import { readStakes } from "../chain/stake-reads.ts";
import { ViewMemo } from "../chain/view-memo.ts";
import { citizenRowOf } from "../project/citizen-row.ts";
import { type Season, toEventRow } from "../project/event-rows.ts";
import { type StakeContext, stakeContexts } from "../project/stake-context.ts";
import { AmbiguousHandClaim, buildCitizenStake } from "../project/stake-facts.ts";
import type { IndexerStore, RangeWrite } from "../store/index.ts";
import type { CitizenReadCache } from "./citizen-read-cache.ts";

export interface RangeIndexerDeps {
  client: PublicClient;
  /** eth_getLogs goes alone: an oversized answer must not fail the requests batched with it. */
  logClient: PublicClient;
  store: IndexerStore;
  contracts: StakerContracts;
  governor: LogRangeGovernor;
  /** Citizens read by this process's concurrent chunks, read once. */
  citizenReads: CitizenReadCache;
}

/** The chain moved under a fetch (a reorg near the head): the range is fetched again. */
export class ReorgDetected extends Error {
  override name = "ReorgDetected";
}

export interface FetchRequest {
  from: bigint;
  to: bigint;
  /**
   * Above the finality boundary: read every header, check that each links to the one before
   * and that every log belongs to them, and keep every hash (a reorg finds its fork point).
   */
  dense?: boolean;
}

/**
 * Everything a block range adds to the tables, fetched in one straight line: headers, logs,
 * the reads they need, rows built by pure functions, and the last header read again. If that
 * header changed, the chain moved during the fetch and nothing is returned.
 */
export async function fetchRange(
  deps: RangeIndexerDeps,
  request: FetchRequest,
): Promise<RangeWrite> {
  const { client, contracts } = deps;
  const { from, to } = request;
  const headers = await readHeaders(client, request.dense ? range(from, to) : [from, to]);
  const first = headers.get(from)!;
  const last = headers.get(to)!;
  const logs = await fetchStakerLogs(deps.logClient, contracts.staker, from, to, deps.governor);

  const blockHashes = new Map<bigint, string>();
  if (from > 0n) blockHashes.set(from - 1n, first.parentHash.toLowerCase());
  for (const [number, header] of headers) blockHashes.set(number, header.hash!.toLowerCase());
  if (request.dense) checkLinked(headers, from, to);
  for (const log of logs) {
    const known = blockHashes.get(log.blockNumber);
    if (request.dense && known !== log.blockHash) {
      throw new ReorgDetected(`a log of block ${log.blockNumber} is from another branch`);
    }
    blockHashes.set(log.blockNumber, log.blockHash);
  }

  const events = logs.map((log) => toEventRow(log, contracts));
  const stakeEvents = events.filter(isCitizenStake);
  const contexts = stakeContexts(stakeEvents, events, to);
  const { citizens, readFailures } = await citizensOf(deps, stakeEvents, to);
  const stakes = await stakeFacts(deps, stakeEvents, contexts, citizens);

  const again = await client.getBlock({ blockNumber: to });
  if (again.hash !== last.hash) throw new ReorgDetected(`block ${to} changed during the fetch`);
  return {
    fromBlock: from,
    toBlock: to,
    events,
    stakes,
    citizens: [...citizens.values()],
    blockHashes,
    readFailures,
  };
}

const isCitizenStake = (event: StakerEventRow) =>
  event.event === "Stake" && isCitizenAsset(event.assetType);

function range(from: bigint, to: bigint): bigint[] {
  const numbers: bigint[] = [];
  for (let n = from; n <= to; n++) numbers.push(n);
  return numbers;
}

async function readHeaders(client: PublicClient, numbers: bigint[]) {
  const unique = [...new Set(numbers)];
  const headers = await Promise.all(unique.map((blockNumber) => client.getBlock({ blockNumber })));
  return new Map<bigint, Block>(headers.map((header, i) => [unique[i]!, header]));
}

function checkLinked(headers: Map<bigint, Block>, from: bigint, to: bigint) {
  for (let n = from + 1n; n <= to; n++) {
    if (headers.get(n)!.parentHash !== headers.get(n - 1n)!.hash) {
      throw new ReorgDetected(`block ${n} does not link to block ${n - 1n}`);
    }
  }
}

const keyOf = (season: number, citizenId: bigint) => `${season}:${citizenId}`;

async function citizensOf(
  deps: RangeIndexerDeps,
  stakeEvents: StakerEventRow[],
  blockNumber: bigint,
): Promise<{ citizens: Map<string, CitizenRow>; readFailures: RangeWrite["readFailures"] }> {
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
  const readFailures: RangeWrite["readFailures"] = [];
  // A citizen's components never change, so any block after its mint will do.
  const readings = await deps.citizenReads.read(missing, (keys) =>
    readCitizens(deps.client, deps.contracts, keys, blockNumber),
  );
  for (const reading of readings) {
    const { row, failure } = citizenRowOf(reading, blockNumber);
    found.set(keyOf(row.season, row.citizenId), row);
    if (failure) readFailures.push(failure);
  }
  return { citizens: found, readFailures };
}

async function stakeFacts(
  deps: RangeIndexerDeps,
  stakeEvents: StakerEventRow[],
  contexts: StakeContext[],
  citizens: Map<string, CitizenRow>,
): Promise<CitizenStakeRow[]> {
  const reads = await readStakes(
    new ViewMemo(deps.client),
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
        laterBonusInBlock: contexts[i]!.laterBonusInBlock,
      };
      try {
        return buildCitizenStake(input);
      } catch (error) {
        if (!(error instanceof AmbiguousHandClaim)) throw error;
        const handFlag = await readHandFlag(deps.client, deps.contracts.staker, {
          transactionHash: event.transactionHash as Hex,
          citizenId: event.citizenId!,
          occurrence: contexts[i]!.occurrenceInTransaction,
        });
        return buildCitizenStake({ ...input, handFlag });
      }
    }),
  );
}
