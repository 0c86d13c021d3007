/**
 * The headers a fetch reads, and the checks that they are still one chain: a fetch that finds
 * the chain moved under it throws ReorgDetected and the range is fetched again.
 */
import type { Block, PublicClient } from "viem";
import { behindAs } from "../chain/node-behind.ts";

/** The chain moved under a fetch (a reorg near the head): the range is fetched again. */
export class ReorgDetected extends Error {
  override name = "ReorgDetected";
}

export function range(from: bigint, to: bigint): bigint[] {
  const numbers: bigint[] = [];
  for (let n = from; n <= to; n++) numbers.push(n);
  return numbers;
}

/** The headers of `numbers`; a block the node does not have yet throws NodeBehind. */
export async function readHeaders(client: PublicClient, numbers: bigint[]) {
  const unique = [...new Set(numbers)];
  const headers = await Promise.all(
    unique.map((blockNumber) => behindAs(blockNumber, () => client.getBlock({ blockNumber }))),
  );
  return new Map<bigint, Block>(headers.map((header, i) => [unique[i]!, header]));
}

export function checkLinked(headers: Map<bigint, Block>, from: bigint, to: bigint) {
  for (let n = from + 1n; n <= to; n++) {
    if (headers.get(n)!.parentHash !== headers.get(n - 1n)!.hash) {
      throw new ReorgDetected(`block ${n} does not link to block ${n - 1n}`);
    }
  }
}

/** Block `number` is still `hash`: read again, it says the chain did not move since. */
export async function checkStillThere(client: PublicClient, number: bigint, hash: string) {
  // A node without the block now (another behind a load balancer) says nothing of a change.
  const again = await behindAs(number, () => client.getBlock({ blockNumber: number }));
  if (again.hash !== hash) throw new ReorgDetected(`block ${number} changed during the fetch`);
}
