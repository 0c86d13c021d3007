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

/**
 * Checks that no block of the range holds staker logs the answer left out. Each header whose bloom
 * admits a staker log while the answer holds none of that block is asked again by its hash
 * (EIP-234's `blockHash` filter, which a node that lacks the block must refuse rather than answer
 * empty). A block that then shows logs throws StakerLogsMissing; one that shows none was a bloom
 * false positive. Returns how many blocks were asked again (the check's cost).
 *
 * The questions ride the client's JSON-RPC batches, unlike the range's eth_getLogs (which goes
 * alone, its answer may be huge): each asks for a block the answer said holds no staker log, so
 * its answer is empty unless a log was truly missing, and a bloom full of other contracts' logs
 * (mainnet) makes many of them.
 */
export async function checkNoStakerLogMissing(
  client: PublicClient,
  staker: Address,
  headers: Iterable<Block>,
  logs: readonly StakerLog[],
): Promise<{ rechecked: number }> {
  const answered = new Set(logs.map((log) => log.blockNumber));
  const suspects = [...headers].filter(
    (header) => !answered.has(header.number!) && mayHoldStakerLogs(header.logsBloom!, staker),
  );
  const found = await Promise.all(
    suspects.map((header) => blockStakerLogs(client, staker, header.hash!)),
  );
  const missed = suspects.findIndex((_, i) => found[i]!.length > 0);
  if (missed >= 0) {
    const header = suspects[missed]!;
    throw new StakerLogsMissing(
      `eth_getLogs left out the ${found[missed]!.length} staker logs of block ${header.number} (${header.hash}); the range is fetched again`,
    );
  }
  return { rechecked: suspects.length };
}

async function blockStakerLogs(
  client: PublicClient,
  staker: Address,
  blockHash: Hex,
): Promise<StakerLog[]> {
  const raw = (await client.request({
    method: "eth_getLogs",
    params: [{ address: staker, blockHash, topics: [STAKER_TOPICS] }],
  })) as unknown as RpcLog[];
  return raw.filter((log) => !log.removed).map(decodeStakerLog);
}
