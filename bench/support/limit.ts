/**
 * The limits the backfills are held against, with none of the indexer's machinery (no queue,
 * checks or proofs): the staker's logs by eth_getLogs, COPYed into a table; the fair limit adds
 * the reads the indexer needs in the fewest eth_calls (readChunk), COPYed in the same transaction.
 */
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import postgres from "postgres";
import type { Address, Hex, PublicClient, RpcLog } from "viem";
import { createPublicClient, http } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { STAKER_TOPICS } from "../../contracts/staker-events.ts";
import { decodeStakerEvent } from "../../indexer/chain/staker-log-decoder.ts";
import { readStaticCalls } from "../../indexer/chain/static-call-batch.ts";
import { identityAbi, s1CitizenAbi, vaultAbi } from "../../indexer/chain/token-abis.ts";
import { calldataOf, decodeView, type ViewCall } from "../../indexer/chain/view-codec.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { rpc } from "./harness.ts";
import { coresBetween, cpuByRole } from "./processes.ts";
import { round } from "./report.ts";

/** Blocks [from, to] in ranges of `size` blocks. */
export function chunks(from: bigint, to: bigint, size: number) {
  const ranges: { from: bigint; to: bigint }[] = [];
  for (let start = from; start <= to; start += BigInt(size)) {
    const end = start + BigInt(size) - 1n;
    ranges.push({ from: start, to: end < to ? end : to });
  }
  return ranges;
}

export type LimitContracts = Record<"s1Citizen" | "s2Citizen" | "vault" | "identity", Address>;
type Row = Record<string, unknown>;
/** The scratch tables, each keyed by its first two columns; a read's column is its function. */
const TABLES = {
  raw_logs:
    "blockNumber bigint, logIndex integer, blockHash text, transactionHash text, topics text[], data text",
  read_citizens:
    "season integer, citizen_id numeric, getIdentityIdOfTokenId numeric, getVaultIdOfTokenId numeric, getItemCacheIdOfTokenId numeric, getLandDeedIdOfTokenId numeric, getRewardRateOfTokenId numeric, getClass text, tokenURI text",
  read_stakes:
    "block_number bigint, log_index integer, timelock_end numeric, points numeric, vault_id numeric, has_vault boolean, getCreditYield text, identityCreditPoints numeric, getConfiguredVaultMultiplier numeric, hand numeric, getCreditMultiplier text",
};
const columnsOf = (table: string) => table.split(", ").map((column) => column.split(" ")[0]!);
/** Rows of a table as values in its columns' order. */
const valuesOf = (table: keyof typeof TABLES, rows: Row[]) =>
  rows.map((row) => columnsOf(TABLES[table]).map((column) => row[column]));
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };
/** A row in COPY's text format: tab-separated, \N for none, backslash escapes. */
const copyLine = (values: unknown[]) =>
  `${values.map((v) => (v == null ? "\\N" : String(v).replace(/[\\\t\n\r]/g, (e) => ESCAPES[e]!))).join("\t")}\n`;
/** Each season's citizen getters (citizen-components.ts). */
const getters = (names: string) => names.split(" ").map((name) => `get${name}OfTokenId`);
const GETTERS = {
  1: getters("IdentityId VaultId ItemCacheId LandDeedId RewardRate"),
  2: getters("IdentityId ItemCacheId LandDeedId"),
};
/** Every function the fair limit reads, whichever contract answers it. */
const ABI = [...stakerAbi, ...s1CitizenAbi, ...identityAbi, ...vaultAbi];
/** One read, and the row its value goes to (under the function's name). */
type Read = [call: ViewCall, into: Row];
const ask = (reads: Read[], into: Row, to: Address, fn: string, ...args: unknown[]) =>
  reads.push([{ address: to, abi: ABI, functionName: fn, args }, into]);

/** One round of reads at `block`: each distinct call once, `perCall` to an eth_call. */
async function readRound(client: PublicClient, block: bigint, reads: Read[], perCall = 100) {
  const keys = reads.map(([call]) => `${call.address}${calldataOf(call)}`);
  const unique = [...new Set(keys)];
  const calls = unique.map((key) => ({ to: key.slice(0, 42) as Hex, data: key.slice(42) as Hex }));
  const answers = await readStaticCalls(client, calls, block, perCall);
  const byKey = new Map(unique.map((key, i) => [key, answers[i]]));
  reads.forEach(([call, into], i) => {
    const answer = byKey.get(keys[i]!);
    into[call.functionName] = answer && decodeView(call, answer);
  });
  return Math.ceil(unique.length / perCall);
}

/**
 * The reads the indexer needs for a chunk's rows (indexer/chain/stake-reads.ts and its peers), at
 * the chunk's last block, in three rounds as each needs the one before (50 tokenURIs a call, as
 * the indexer). `seen`: the citizens read before, with their component vault.
 */
async function readChunk(
  client: PublicClient,
  c: LimitContracts & { staker: Address },
  seen: Map<string, bigint>,
  logs: RpcLog[],
  to: bigint,
) {
  const [stakes, citizens, shared] = [[] as Row[], [] as Row[], {} as Row];
  const [first, uris, second, third] = [[] as Read[], [] as Read[], [] as Read[], [] as Read[]];
  ask(first, shared, c.staker, "vaultCreditMultiplier", "?");
  for (const log of logs) {
    const { eventName, args } = decodeStakerEvent(log.topics, log.data);
    if (eventName !== "Stake") continue;
    const season = args.asset === c.s1Citizen ? 1 : args.asset === c.s2Citizen ? 2 : 0;
    if (!season) continue;
    const [id, key] = [args.amountOrTokenId, `${season}:${args.amountOrTokenId}`];
    const [block_number, log_index] = [BigInt(log.blockNumber!), Number(log.logIndex)];
    const stake: Row = { block_number, log_index, season, id, key };
    stakes.push(stake);
    ask(first, stake, c.staker, `stakedS${season}`, args.staker, id);
    if (seen.has(key)) continue;
    const citizen = { season, citizen_id: id, key };
    const address = season === 1 ? c.s1Citizen : c.s2Citizen;
    seen.set(key, 0n);
    citizens.push(citizen);
    for (const getter of GETTERS[season]) ask(first, citizen, address, getter, id);
    ask(uris, citizen, address, "tokenURI", id);
  }
  const firstRounds = [readRound(client, to, first), readRound(client, to, uris, 50)];
  const ethCalls = await Promise.all(firstRounds);
  for (const citizen of citizens) {
    seen.set(citizen.key as string, (citizen.getVaultIdOfTokenId as bigint | undefined) ?? 0n);
    if (citizen.season === 1)
      ask(second, citizen, c.identity, "getClass", citizen.getIdentityIdOfTokenId);
  }
  for (const stake of stakes) {
    const entry = (stake.stakedS1 ?? stake.stakedS2) as unknown[];
    const component = seen.get(stake.key as string)!;
    const vault = component || (entry[3] as bigint);
    stake.hand = stake.season === 1 ? shared.vaultCreditMultiplier : null;
    Object.assign(stake, { timelock_end: entry[1], points: entry[2] });
    if (stake.season !== 1) continue;
    Object.assign(stake, { vault_id: vault, has_vault: entry[4] });
    ask(second, stake, c.staker, "getCreditYield", stake.id, component);
    if (vault === 0n) continue;
    ask(second, stake, c.staker, "getConfiguredVaultMultiplier", vault);
    ask(second, stake, c.vault, "getCreditMultiplier", vault);
  }
  ethCalls.push(await readRound(client, to, second));
  for (const stake of stakes) {
    if (stake.season === 1)
      ask(third, stake, c.staker, "identityCreditPoints", stake.getCreditYield);
  }
  ethCalls.push(await readRound(client, to, third));
  const tables = {
    read_citizens: valuesOf("read_citizens", citizens),
    read_stakes: valuesOf("read_stakes", stakes),
  };
  return { ethCalls: ethCalls.reduce((sum, n) => sum + n, 0), tables };
}

/** A limit over `range` through `url`, fair given `contracts`; each fetch overlaps a COPY. */
export async function measureLimit(
  chain: { url: string; anvilPid: number; staker: Address; contracts?: LimitContracts },
  range: { from: bigint; to: bigint },
  chunkSize: number,
) {
  const database = await createScratchDatabase("bench_limit");
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const request = rpc(chain.url);
  const transport = http(chain.url, { retryCount: 0, timeout: 120_000 });
  const client = createPublicClient({ transport });
  const { contracts } = chain;
  const seen = new Map<string, bigint>();
  try {
    for (const [name, columns] of Object.entries(TABLES)) {
      const [first, second] = columnsOf(columns);
      await sql.unsafe(`create table ${name} (${columns}, primary key (${first}, ${second}))`);
    }
    const ranges = chunks(range.from, range.to, chunkSize);
    const cpuBefore = await cpuByRole({ anvil: chain.anvilPid });
    const started = performance.now();
    let [fetchMs, readMs, copyMs, events, ethCalls] = [0, 0, 0, 0, 0];
    const fetchChunk = async ({ from, to }: { from: bigint; to: bigint }) => {
      const begun = performance.now();
      const filter = { fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` };
      const logs = (await request({
        method: "eth_getLogs",
        params: [{ address: chain.staker, ...filter, topics: [STAKER_TOPICS] }],
      })) as RpcLog[];
      const fetched = performance.now();
      const reads =
        contracts &&
        (await readChunk(client, { ...contracts, staker: chain.staker }, seen, logs, to));
      readMs += performance.now() - fetched;
      fetchMs += performance.now() - begun;
      ethCalls += reads?.ethCalls ?? 0;
      return { logs, tables: reads?.tables };
    };
    let next = fetchChunk(ranges[0]!);
    for (let index = 0; index < ranges.length; index++) {
      const { logs, tables: reads } = await next;
      if (index + 1 < ranges.length) next = fetchChunk(ranges[index + 1]!);
      if (logs.length === 0) continue;
      const begun = performance.now();
      const rows = logs.map((log) => ({
        ...log,
        blockNumber: BigInt(log.blockNumber!),
        logIndex: Number(log.logIndex),
        topics: `{${log.topics}}`,
      }));
      const tables = { raw_logs: valuesOf("raw_logs", rows), ...reads };
      await sql.begin(async (tx) => {
        for (const [name, lines] of Object.entries(tables)) {
          if (lines.length === 0) continue;
          const writable = await tx.unsafe(`copy ${name} from stdin`).writable();
          await pipeline(Readable.from([lines.map(copyLine).join("")]), writable);
        }
      });
      copyMs += performance.now() - begun;
      events += logs.length;
    }
    const seconds = (performance.now() - started) / 1000;
    const cores = coresBetween(cpuBefore, await cpuByRole({ anvil: chain.anvilPid }), seconds);
    const [stored] = await sql<
      { stakes: string }[]
    >`select count(*)::text as stakes from read_stakes`;
    return {
      fair: contracts !== undefined,
      events,
      stakeRows: Number(stored?.stakes ?? 0),
      ethCalls,
      chunks: ranges.length,
      seconds: round(seconds, 3),
      eventsPerSecond: round(events / seconds, 0),
      fetchSeconds: round(fetchMs / 1000, 3),
      readSeconds: round(readMs / 1000, 3),
      copySeconds: round(copyMs / 1000, 3),
      cores: { anvil: cores.anvil, postgres: cores.postgres, bench: cores.bench },
    };
  } finally {
    await sql.end({ timeout: 5 });
    await database.drop();
  }
}

export type LimitRun = Awaited<ReturnType<typeof measureLimit>>;
