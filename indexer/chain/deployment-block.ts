import type { Address, PublicClient } from "viem";

/** The first block at which `address` has code: a binary search on eth_getCode (needs archive state). */
export async function findDeploymentBlock(client: PublicClient, address: Address): Promise<bigint> {
  let high = await client.getBlockNumber();
  const hasCode = async (blockNumber: bigint) =>
    ((await client.getCode({ address, blockNumber })) ?? "0x") !== "0x";
  if (!(await hasCode(high))) throw new Error(`no contract at ${address} on this chain`);
  let low = 0n;
  while (low < high) {
    const middle = (low + high) / 2n;
    if (await hasCode(middle)) high = middle;
    else low = middle + 1n;
  }
  return low;
}
