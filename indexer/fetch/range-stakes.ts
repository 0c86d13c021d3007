/**
 * The rows a range's stakes add: the citizens they meet (those the tables hold are not read
 * again) and each stake's citizen_stakes row, from reads at the fewest blocks that prove it.
 */
import type { Block, Hex, PublicClient } from "viem";
import type { CitizenRow, CitizenStakeRow, StakerEventRow } from "../../db/schema.ts";
import type { BlockAt } from "../chain/block-pin.ts";
import { createBlockReads } from "../chain/block-reads.ts";
import { type CitizenComponents, type CitizenKey, readCitizens } from "../chain/citizen-reads.ts";
import { readHandFlag } from "../chain/hand-flag.ts";
import type { StakerLog } from "../chain/logs.ts";
import { readStakes, tryReadStakes } from "../chain/stake-reads.ts";
import { citizenRowOf } from "../project/citizen-row.ts";
import type { Season } from "../project/event-rows.ts";
import { readBlocks, type StakeContext } from "../project/stake-context.ts";
import { AmbiguousHandClaim, buildCitizenStake } from "../project/stake-facts.ts";
import { proveStake } from "../project/stake-proof.ts";
import type { RangeWrite } from "../store/range-writes.ts";
import { ReorgDetected, readHeaders } from "./block-headers.ts";
import type { FetchDeps } from "./fetch-range.ts";
import { explainConfigurations } from "./stake-configuration.ts";

const keyOf = (season: number, citizenId: bigint) => `${season}:${citizenId}`;

/** The citizens a range's stakes meet: those the tables hold, and the rest read. */
export interface CitizenRows {
  citizens: Map<string, CitizenRow>;
  /** The citizens read now: the others are in the tables already. */
  read: CitizenRow[];
  readFailures: RangeWrite["readFailures"];
}

/**
 * The citizens a range's stakes meet (`rows`), and first each one's component vault (0 for none,
 * and for S2), all a stake's reads need of its citizen: for a citizen read now it is known after
 * the first round of its reads, so the stakes' reads go beside the identity classes' round.
 */
export function citizensOf(
  deps: FetchDeps,
  stakeEvents: StakerEventRow[],
  block: Required<BlockAt>,
): { componentVaults: Promise<Map<string, bigint>>; rows: Promise<CitizenRows> } {
  const keys = new Map<string, CitizenKey>();
  for (const event of stakeEvents) {
    const season = event.citizenSeason as Season;
    keys.set(keyOf(season, event.citizenId!), { season, citizenId: event.citizenId! });
  }
  const known = deps.knownCitizens([...keys.values()]);
  let firstRound: (components: readonly CitizenComponents[]) => void = () => {};
  const firstRoundRead = new Promise<readonly CitizenComponents[]>((resolve) => {
    firstRound = resolve;
  });
  const rows = citizenRows(deps, keys, known, block, firstRound);
  const componentVaults = componentVaultsOf(keys.size, known, firstRoundRead, rows);
  // Failing with the rows, which the caller awaits: never unobserved here.
  componentVaults.catch(() => {});
  return { componentVaults, rows };
}

async function citizenRows(
  deps: FetchDeps,
  keys: Map<string, CitizenKey>,
  known: Promise<CitizenRow[]>,
  block: Required<BlockAt>,
  firstRound: (components: readonly CitizenComponents[]) => void,
): Promise<CitizenRows> {
  const found = new Map<string, CitizenRow>();
  for (const row of await known) found.set(keyOf(row.season, row.citizenId), row);
  const missing = [...keys].filter(([key]) => !found.has(key)).map(([, key]) => key);
  const readFailures: RangeWrite["readFailures"] = [];
  // A citizen's components never change, so any block after its mint will do.
  const readings = await deps.citizenReads.read(missing, (keys) =>
    readCitizens(deps.client, deps.contracts, keys, block, firstRound),
  );
  const read: CitizenRow[] = [];
  for (const reading of readings) {
    const { row, failure } = citizenRowOf(reading, block.blockNumber);
    found.set(keyOf(row.season, row.citizenId), row);
    read.push(row);
    if (failure) readFailures.push(failure);
  }
  return { citizens: found, read, readFailures };
}

/**
 * Each citizen's component vault: from the tables, then from this fetch's own first round when
 * it read every other citizen, or else (some were read by another chunk or process) once the
 * rows are in.
 */
async function componentVaultsOf(
  citizens: number,
  known: Promise<CitizenRow[]>,
  firstRoundRead: Promise<readonly CitizenComponents[]>,
  rows: Promise<CitizenRows>,
): Promise<Map<string, bigint>> {
  const vaults = new Map<string, bigint>();
  const add = (citizen: { season: number; citizenId: bigint; componentVaultId?: bigint | null }) =>
    vaults.set(keyOf(citizen.season, citizen.citizenId), citizen.componentVaultId ?? 0n);
  for (const row of await known) add(row);
  if (vaults.size === citizens) return vaults;
  const unread = citizens - vaults.size;
  const allRead = firstRoundRead.then((components) =>
    components.length === unread ? components : new Promise<never>(() => {}),
  );
  const read = await Promise.race([allRead, rows.then(({ citizens }) => [...citizens.values()])]);
  for (const citizen of read) add(citizen);
  return vaults;
}

/**
 * The citizen_stakes rows of the chunk's stakes. The stakes are first read where the fewest
 * blocks answer for all of them (mostly the chunk's last block, all in the same few
 * multicalls); a stake those reads prove (stake-proof.ts) takes them, and only the rest are
 * read at their own blocks, as before, and where their figures do not give their points (the
 * owner reconfigured in the stake's block) the figures are looked for before the stake
 * (stake-configuration.ts). Every read names its block by the hash the fetch saw (the log's own
 * for a stake's block), so no node can answer it from another block's state.
 */
export async function stakeFacts(
  deps: FetchDeps,
  chunk: {
    stakeEvents: StakerEventRow[];
    contexts: StakeContext[];
    /** citizensOf's: the vaults come first (the reads), the rows after (the proofs). */
    citizens: ReturnType<typeof citizensOf>;
    headers: Map<bigint, Block>;
    logs: StakerLog[];
    blockHashes: Map<bigint, string>;
  },
): Promise<CitizenStakeRow[]> {
  const blockReads = createBlockReads(deps.client);
  const blocks = readBlocks(chunk.stakeEvents, pinnableContexts(chunk.contexts, chunk.blockHashes));
  const vaults = await chunk.citizens.componentVaults;
  const toRead = chunk.stakeEvents.map((event, i) => ({
    event,
    componentVaultId: vaults.get(keyOf(event.citizenSeason!, event.citizenId!))!,
    readBlock: blocks[i],
  }));
  const stakeAt = ({ event, componentVaultId }: (typeof toRead)[number], blockNumber: bigint) => ({
    season: event.citizenSeason as Season,
    citizenId: event.citizenId!,
    staker: event.account as Hex,
    componentVaultId,
    blockNumber,
    blockHash: chunk.blockHashes.get(blockNumber) as Hex,
  });
  const readLater = toRead.filter((stake) => stake.readBlock !== undefined);
  const laterReads = await tryReadStakes(
    blockReads,
    deps.contracts,
    readLater.map((stake) => stakeAt(stake, stake.readBlock!)),
  );
  const blockTimes = await blockTimesOf(
    deps.client,
    readLater.map((stake) => stake.event),
    chunk,
  );
  const laterReadOf = new Map(readLater.map((stake, i) => [stake, laterReads[i]]));
  const { citizens } = await chunk.citizens.rows;
  const stakes = toRead.map((stake, i) => ({
    ...stake,
    context: chunk.contexts[i]!,
    citizen: citizens.get(keyOf(stake.event.citizenSeason!, stake.event.citizenId!))!,
  }));
  const proofs = stakes.map((stake, i) =>
    proveStake({
      ...stake,
      blockTime: blockTimes.get(stake.event.blockNumber),
      readAt:
        stake.readBlock === undefined
          ? undefined
          : { blockNumber: stake.readBlock, reads: laterReadOf.get(toRead[i]!) },
    }),
  );
  const unproven = stakes.filter((_, i) => !proofs[i]!.proven);
  const ownReads = await readStakes(
    blockReads,
    deps.contracts,
    unproven.map((stake) => stakeAt(stake, stake.event.blockNumber)),
  );
  const explained = await explainConfigurations(
    deps,
    blockReads,
    unproven.map((stake, i) => ({
      ...stake,
      reads: ownReads[i]!,
      laterBonus: stake.context.laterBonusInBlock,
    })),
    chunk.headers,
  );
  const explainedOf = new Map(unproven.map((stake, i) => [stake, explained[i]!]));

  // Built in one pass; only a stake whose hand claim is ambiguous waits, for its flag's read.
  const handClaims: Promise<void>[] = [];
  const rows = stakes.map((stake, i): CitizenStakeRow | undefined => {
    const proof = proofs[i]!;
    const input = {
      event: stake.event,
      citizen: stake.citizen,
      ...(proof.proven
        ? { reads: proof.reads, laterBonus: proof.laterBonus }
        : { ...explainedOf.get(stake)!, laterBonus: stake.context.laterBonusInBlock }),
    };
    try {
      return buildCitizenStake(input);
    } catch (error) {
      if (!(error instanceof AmbiguousHandClaim)) throw error;
      const handFlag = readHandFlag(deps.client, deps.contracts.staker, {
        transactionHash: stake.event.transactionHash as Hex,
        citizenId: stake.event.citizenId!,
        occurrence: stake.context.occurrenceInTransaction,
      });
      const claim = handFlag.then((flag) => {
        rows[i] = buildCitizenStake({ ...input, handFlag: flag });
      });
      // Observed here too: a later stake's throw leaves this map before anything awaits it.
      claim.catch(() => {});
      handClaims.push(claim);
      return undefined;
    }
  });
  await Promise.all(handClaims);
  return rows as CitizenStakeRow[];
}

/**
 * The contexts with each stake held only through the last block, at or before its real end, whose
 * hash the fetch knows (a log's block or a header read), so its later read can name its block by
 * hash (block-pin.ts). The block before a withdraw often holds no staker log: read there, it
 * went by number. The stake's own block is always known, so every interval keeps a block.
 */
function pinnableContexts(
  contexts: readonly StakeContext[],
  blockHashes: Map<bigint, string>,
): StakeContext[] {
  const known = [...blockHashes.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return contexts.map((context) => {
    const at = lastAtOrBelow(known, context.heldThrough);
    return at === undefined ? context : { ...context, heldThrough: at };
  });
}

function lastAtOrBelow(sorted: readonly bigint[], limit: bigint): bigint | undefined {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle]! <= limit) low = middle + 1;
    else high = middle;
  }
  return low === 0 ? undefined : sorted[low - 1];
}

/**
 * The timestamps of the blocks holding these stakes: from their logs (newer nodes send each
 * log's block time) or the headers the fetch already has; the others read (cheap, and batched),
 * each checked to be the block the stake's log came from.
 */
async function blockTimesOf(
  client: PublicClient,
  stakes: StakerEventRow[],
  known: { headers: Map<bigint, Block>; logs: StakerLog[] },
): Promise<Map<bigint, bigint>> {
  const times = new Map<bigint, bigint>();
  for (const [number, header] of known.headers) times.set(number, header.timestamp);
  for (const log of known.logs) {
    if (log.blockTimestamp !== undefined) times.set(log.blockNumber, log.blockTimestamp);
  }
  const missing = stakes.filter((stake) => !times.has(stake.blockNumber));
  const read = await readHeaders(
    client,
    missing.map((stake) => stake.blockNumber),
  );
  for (const stake of missing) {
    const header = read.get(stake.blockNumber)!;
    if (header.hash!.toLowerCase() !== stake.blockHash) {
      throw new ReorgDetected(`block ${stake.blockNumber} changed during the fetch`);
    }
    times.set(stake.blockNumber, header.timestamp);
  }
  return times;
}
