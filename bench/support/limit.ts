/**
 * The raw limit the backfills are held against: the staker's logs fetched with eth_getLogs and
 * COPYed into a table, with none of the indexer's work between. What moving the data alone costs.
 */
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import postgres from "postgres";
import type { Address, RpcLog } from "viem";
import { STAKER_TOPICS } from "../../contracts/staker-events.ts";
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

/**
 * The limit: the staker's logs of `range` fetched with raw eth_getLogs chunk by chunk from `url`
 * (the node itself or a proxy in front of it), the next fetch overlapping the current COPY of
 * the raw rows into a scratch table. What moving the data alone costs.
 */
export async function measureLimit(
  chain: { url: string; anvilPid: number; staker: Address },
  range: { from: bigint; to: bigint },
  chunkSize: number,
) {
  const database = await createScratchDatabase("bench_limit");
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const request = rpc(chain.url);
  try {
    await sql`create table raw_logs (
      block_number bigint not null, log_index integer not null, block_hash text not null,
      transaction_hash text not null, topics text[] not null, data text not null,
      primary key (block_number, log_index))`;
    const ranges = chunks(range.from, range.to, chunkSize);
    const cpuBefore = await cpuByRole({ anvil: chain.anvilPid });
    const started = performance.now();
    let [fetchMs, copyMs, events] = [0, 0, 0];
    const fetchLogs = async ({ from, to }: { from: bigint; to: bigint }) => {
      const begun = performance.now();
      const filter = { fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` };
      const logs = (await request({
        method: "eth_getLogs",
        params: [{ address: chain.staker, ...filter, topics: [STAKER_TOPICS] }],
      })) as RpcLog[];
      fetchMs += performance.now() - begun;
      return logs;
    };
    let next = fetchLogs(ranges[0]!);
    for (let index = 0; index < ranges.length; index++) {
      const logs = await next;
      if (index + 1 < ranges.length) next = fetchLogs(ranges[index + 1]!);
      if (logs.length === 0) continue;
      const begun = performance.now();
      // COPY text format: tab-separated, one row a line; hex needs no escaping.
      const rows = logs.map(
        (entry) =>
          `${BigInt(entry.blockNumber!)}\t${Number(entry.logIndex)}\t${entry.blockHash}\t${entry.transactionHash}\t{${entry.topics.join(",")}}\t${entry.data}\n`,
      );
      const writable =
        await sql`copy raw_logs (block_number, log_index, block_hash, transaction_hash, topics, data) from stdin`.writable();
      await pipeline(Readable.from([rows.join("")]), writable);
      copyMs += performance.now() - begun;
      events += logs.length;
    }
    const seconds = (performance.now() - started) / 1000;
    const cores = coresBetween(cpuBefore, await cpuByRole({ anvil: chain.anvilPid }), seconds);
    const [stored] = await sql<{ count: string }[]>`select count(*)::text as count from raw_logs`;
    return {
      events,
      storedRows: Number(stored?.count ?? 0),
      chunks: ranges.length,
      seconds: round(seconds, 3),
      eventsPerSecond: round(events / seconds, 0),
      fetchSeconds: round(fetchMs / 1000, 3),
      copySeconds: round(copyMs / 1000, 3),
      cores: { anvil: cores.anvil, postgres: cores.postgres, bench: cores.bench },
    };
  } finally {
    await sql.end({ timeout: 5 });
    await database.drop();
  }
}

export type LimitRun = Awaited<ReturnType<typeof measureLimit>>;
