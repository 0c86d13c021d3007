import type { Address, Block, Hex, PublicClient } from "viem";
import { mayHoldStakerLogs } from "./log-bloom.ts";
import { decodeStakerLog, type RpcLog, type StakerLog } from "./logs.ts";
import { behindAs } from "./node-behind.ts";
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
 * (reaskSuspects). Returns how many blocks were asked again and held no more (its cost).
 */
export async function checkNoStakerLogMissing(
  client: PublicClient,
  staker: Address,
  headers: Iterable<Block>,
  logs: readonly StakerLog[],
): Promise<{ harmless: number }> {
  const answered = new Set(logs.map((log) => log.blockNumber));
  const suspects = [...headers]
    .filter(
      (header) => !answered.has(header.number!) && mayHoldStakerLogs(header.logsBloom!, staker),
    )
    .map((header) => ({ blockNumber: header.number!, blockHash: header.hash!, answered: 0 }));
  await reaskSuspects(client, staker, suspects);
  return { harmless: suspects.length };
}

/** A block that may hold more staker logs than the `answered` ones the range's answer gave. */
export interface SuspectBlock {
  blockNumber: bigint;
  blockHash: Hex;
  answered: number;
}

/**
 * Asks each suspect block again for its staker logs by its hash (EIP-234's `blockHash` filter,
 * which a node that lacks the block must refuse rather than answer empty). A block that then
 * shows more logs than the answer held throws StakerLogsMissing; one that shows no more was a
 * false alarm.
 *
 * The questions ride the client's JSON-RPC batches, unlike the range's eth_getLogs (which goes
 * alone, its answer may be huge): each asks for one block's staker logs, a few at most, and a
 * mainnet bloom full of other contracts' logs makes many of them on the follower's path.
 */
export async function reaskSuspects(
  client: PublicClient,
  staker: Address,
  suspects: readonly SuspectBlock[],
): Promise<void> {
  // A node without the block (a load balancer's backend behind the others) answers "unknown
  // block": it waits for the block, like every question about one it lacks.
  const found = await Promise.all(
    suspects.map((suspect) =>
      behindAs(suspect.blockNumber, () => blockStakerLogs(client, staker, suspect.blockHash)),
    ),
  );
  const missed = suspects.findIndex((suspect, i) => found[i]!.length > suspect.answered);
  if (missed >= 0) {
    const suspect = suspects[missed]!;
    throw new StakerLogsMissing(
      `eth_getLogs left out ${found[missed]!.length - suspect.answered} of the ${found[missed]!.length} staker logs of block ${suspect.blockNumber} (${suspect.blockHash}); the range is fetched again`,
    );
  }
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
