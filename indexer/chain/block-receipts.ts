import { createMPT } from "@ethereumjs/mpt";
import {
  type Address,
  bytesToHex,
  type Hex,
  hexToBytes,
  numberToHex,
  type PublicClient,
  toRlp,
} from "viem";
import { errorSummary } from "../../lib/log.ts";
import { isTransientRpcFailure } from "../../lib/rpc-failures.ts";
import { decodeStakerLog, type RpcLog, type StakerLog } from "./logs.ts";
import { STAKER_TOPICS } from "./staker-log-decoder.ts";

/**
 * Nothing settles which staker logs a block holds: its bloom admits some, eth_getLogs cannot be
 * taken at its word, and its receipts cannot be had or do not match the header's receiptsRoot.
 * Nothing of the block is written; the caller holds at it and says why. `mayPass`: the node has
 * no receipts for the block yet, or another block's at its height (a load balancer's backend
 * behind, or on another branch): asked again, it may well answer; a refusal or a mismatch needs
 * an operator.
 */
export class StakerLogsUnsettled extends Error {
  override name = "StakerLogsUnsettled";
  constructor(
    readonly blockNumber: bigint,
    readonly reason: string,
    readonly mayPass = false,
  ) {
    super(
      `the staker logs of block ${blockNumber} are unsettled: ${reason}; nothing is written from it on until the node answers eth_getBlockReceipts with receipts matching the header's receiptsRoot`,
    );
  }
}

/**
 * A node's clients for the missing-log checks: its batched one (headers, re-asks by hash), and
 * one for receipts, which go alone and with a larger answer cap (MAX_RECEIPTS_ANSWER_BYTES).
 */
export interface NodeClients {
  client: PublicClient;
  receiptsClient: PublicClient;
}

/**
 * The largest eth_getBlockReceipts answer taken. A block's receipts cannot be asked for in
 * parts, and a block stuffed with logs fills its bloom, so it admits the staker and must be
 * settled: the gas limit bounds it (a 45M-gas block of empty LOG0s holds 120,000 logs, ~40 MB of
 * JSON), and the cap leaves room for higher limits.
 */
export const MAX_RECEIPTS_ANSWER_BYTES = 128 * 1024 * 1024;

/** The header fields a block's receipts are checked against. */
export interface ReceiptsHeader {
  number: bigint;
  hash: Hex;
  receiptsRoot: Hex;
  /** The block's transaction hashes, in order (a header read without its transactions). */
  transactions?: readonly (Hex | { hash: Hex })[];
}

interface RpcReceipt {
  type?: Hex;
  status?: Hex;
  /** Before Byzantium, the state root after the transaction instead of a status. */
  root?: Hex;
  cumulativeGasUsed: Hex;
  logsBloom: Hex;
  logs: Array<Pick<RpcLog, "address" | "topics" | "data">>;
  transactionHash: Hex;
  transactionIndex: Hex;
  blockHash?: Hex | null;
}

/**
 * The staker logs of a block, from its receipts (eth_getBlockReceipts at its number, each
 * receipt's block hash the header's), after checking them against the header's receiptsRoot:
 * the trie of the receipts (each the transaction type byte, then the RLP of [status, cumulative
 * gas, bloom, logs], keyed by the RLP of its index; Yellow Paper §4.4.1, EIP-2718) must have
 * that root. The root commits to
 * every log of the block, in order, so a node cannot leave one out here without the root
 * giving it away. Each log's position (logIndex) is counted from the receipts, never taken from
 * the node, and its transaction hash is checked against the header's list when the header has
 * one (the root does not commit to hashes).
 *
 * Throws StakerLogsUnsettled when the receipts cannot settle it: the node does not serve the
 * method, has no receipts for the block or another block's (both may pass), or gives receipts
 * of another root. A failure of the transport (a timeout, a 429, a node busy) is thrown as it
 * is, for the caller's retry.
 */
export async function verifiedStakerLogs(
  client: PublicClient,
  staker: Address,
  header: ReceiptsHeader,
): Promise<StakerLog[]> {
  const receipts = await readReceipts(client, header);
  const elsewhere = receipts.find(
    (receipt) => receipt.blockHash && receipt.blockHash.toLowerCase() !== header.hash.toLowerCase(),
  );
  if (elsewhere) {
    throw new StakerLogsUnsettled(
      header.number,
      `the node gives the receipts of block ${elsewhere.blockHash} at its height`,
      true,
    );
  }
  const root = await receiptsRoot(receipts);
  if (root !== header.receiptsRoot.toLowerCase()) {
    throw new StakerLogsUnsettled(
      header.number,
      `its ${receipts.length} receipts have the root ${root}, not the header's ${header.receiptsRoot}`,
    );
  }
  const hashes = header.transactions?.map((tx) => (typeof tx === "string" ? tx : tx.hash));
  const logs: StakerLog[] = [];
  const address = staker.toLowerCase();
  const topics = new Set(STAKER_TOPICS.map((topic) => topic.toLowerCase()));
  let logIndex = 0;
  for (const [index, receipt] of receipts.entries()) {
    const hash = receipt.transactionHash.toLowerCase();
    if (hashes && hashes[index]?.toLowerCase() !== hash) {
      throw new StakerLogsUnsettled(
        header.number,
        `its receipt ${index} names the transaction ${hash}, which the header does not have there`,
      );
    }
    for (const log of receipt.logs) {
      const position = logIndex++;
      if (log.address.toLowerCase() !== address) continue;
      if (!topics.has(log.topics[0]?.toLowerCase())) continue;
      logs.push(
        decodeStakerLog({
          address: log.address,
          topics: log.topics,
          data: log.data,
          blockNumber: numberToHex(header.number),
          blockHash: header.hash,
          transactionHash: receipt.transactionHash,
          logIndex: numberToHex(position),
        }),
      );
    }
  }
  return logs;
}

async function readReceipts(client: PublicClient, header: ReceiptsHeader): Promise<RpcReceipt[]> {
  let receipts: RpcReceipt[] | null;
  try {
    // By number: providers that document only a number outnumber those that take a hash. The
    // receipts' own block hash and the root hold the answer to this very block.
    receipts = (await client.request({
      method: "eth_getBlockReceipts",
      params: [numberToHex(header.number)],
    })) as unknown as RpcReceipt[] | null;
  } catch (error) {
    if (isTransientRpcFailure(error)) throw error;
    throw new StakerLogsUnsettled(
      header.number,
      `its receipts cannot be read (eth_getBlockReceipts: ${errorSummary(error)})`,
    );
  }
  if (!Array.isArray(receipts)) {
    throw new StakerLogsUnsettled(header.number, "the node has no receipts for it yet", true);
  }
  return receipts.toSorted((a, b) => Number(a.transactionIndex) - Number(b.transactionIndex));
}

/** The root of the receipts' trie, as a block header holds it. */
export async function receiptsRoot(receipts: readonly RpcReceipt[]): Promise<Hex> {
  const trie = await createMPT();
  for (const [index, receipt] of receipts.entries()) {
    await trie.put(hexToBytes(toRlp(integer(index))), hexToBytes(encodeReceipt(receipt)));
  }
  return bytesToHex(trie.root());
}

/** A receipt as the trie holds it: EIP-2718's type byte (none for a legacy one), then its RLP. */
function encodeReceipt(receipt: RpcReceipt): Hex {
  const outcome =
    receipt.status !== undefined ? (BigInt(receipt.status) === 1n ? "0x01" : "0x") : receipt.root!;
  const body = toRlp([
    outcome,
    integer(BigInt(receipt.cumulativeGasUsed)),
    receipt.logsBloom,
    receipt.logs.map((log) => [log.address, log.topics, log.data]),
  ]);
  const type = BigInt(receipt.type ?? "0x0");
  return type === 0n ? body : (`0x${type.toString(16).padStart(2, "0")}${body.slice(2)}` as Hex);
}

/** An integer as RLP takes it: big-endian bytes without leading zeros, none for zero. */
function integer(value: number | bigint): Hex {
  if (BigInt(value) === 0n) return "0x";
  const hex = BigInt(value).toString(16);
  return `0x${hex.length % 2 === 0 ? hex : `0${hex}`}`;
}
