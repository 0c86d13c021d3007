import type { Address, Block, Hex, PublicClient } from "viem";
import { mayHoldStakerLogs } from "./log-bloom.ts";
import { decodeStakerLog, type RpcLog, type StakerLog } from "./logs.ts";
import { STAKER_TOPICS } from "./staker-log-decoder.ts";

/**
 * An eth_getLogs answer left out staker logs the block itself holds (a load balancer answering
 * from a node behind the block, a branch that flipped away and back between two reads). Nothing
 * of the range is written: it is fetched again, like any transient failure.
 */
export class StakerLogsMissing extends Error {
  override name = "StakerLogsMissing";
}

/** Blocks asked again at once; one answer each, small unless the block is a log flood. */
const RECHECK_CONCURRENCY = 8;

/**
 * Checks that no block of the range holds staker logs the answer left out. Each header whose bloom
 * admits a staker log while the answer holds none of that block is asked again by its hash
 * (EIP-234's `blockHash` filter, which a node that lacks the block must refuse rather than answer
 * empty). A block that then shows logs throws StakerLogsMissing; one that shows none was a bloom
 * false positive. Returns how many blocks were asked again (the check's cost).
 */
export async function checkNoStakerLogMissing(
  logClient: PublicClient,
  staker: Address,
  headers: Iterable<Block>,
  logs: readonly StakerLog[],
): Promise<{ rechecked: number }> {
  const answered = new Set(logs.map((log) => log.blockNumber));
  const suspects = [...headers].filter(
    (header) => !answered.has(header.number!) && mayHoldStakerLogs(header.logsBloom!, staker),
  );
  let next = 0;
  const worker = async () => {
    while (next < suspects.length) {
      const header = suspects[next++]!;
      const found = await blockStakerLogs(logClient, staker, header.hash!);
      if (found.length > 0) {
        throw new StakerLogsMissing(
          `eth_getLogs left out the ${found.length} staker logs of block ${header.number} (${header.hash}); the range is fetched again`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(RECHECK_CONCURRENCY, suspects.length) }, worker));
  return { rechecked: suspects.length };
}

async function blockStakerLogs(
  logClient: PublicClient,
  staker: Address,
  blockHash: Hex,
): Promise<StakerLog[]> {
  const raw = (await logClient.request({
    method: "eth_getLogs",
    params: [{ address: staker, blockHash, topics: [STAKER_TOPICS] }],
  })) as unknown as RpcLog[];
  return raw.filter((log) => !log.removed).map(decodeStakerLog);
}
