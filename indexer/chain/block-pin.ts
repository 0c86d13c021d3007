import {
  BaseError,
  type Hex,
  InvalidParamsRpcError,
  type PublicClient,
  RpcRequestError,
  zeroAddress,
} from "viem";
import { errorSummary, logger } from "../../lib/log.ts";

/**
 * The block a read is made at. With `blockHash`, the read names the block by hash (EIP-1898), so
 * a node that does not hold that very block (one still building it, a load balancer's node at
 * another height, another branch) fails the read instead of answering from another state; the
 * failure is retried like any transient one. `blockNumber` names it in messages, and is what a
 * node that refuses block hashes is asked instead.
 */
export interface BlockAt {
  blockNumber: bigint;
  blockHash?: Hex;
}

/** A block given by number alone (reads that back no row: checks, tests) or with its hash. */
export function blockAt(block: bigint | BlockAt): BlockAt {
  return typeof block === "bigint" ? { blockNumber: block } : block;
}

/** How viem's read actions name a block: by hash where the node takes one, else by number. */
export type BlockParameter = { blockHash: Hex } | { blockNumber: bigint };

/**
 * Clients whose node refused a block hash in eth_call while taking the same call by number: a
 * capability of the node, the same for every process, so a per-process memo (like finality.ts's)
 * only saves each process its one probe.
 */
const numbersOnly = new WeakSet<PublicClient>();
const log = logger("block-pin");

/**
 * Runs `read` at `block`, by hash when the block has one. A refusal of the hash parameter itself
 * (-32602, or a node's "invalid argument"/"unmarshal" wording) is judged once by a probe: an
 * eth_call at the latest block's hash. If the node refuses that too it has no EIP-1898, and
 * this client reads by number from then on, said once in the logs; if it takes it, the refusal
 * was about this block and is thrown for the retry, never answered by number.
 */
export async function pinnedRead<T>(
  client: PublicClient,
  block: BlockAt,
  read: (at: BlockParameter) => Promise<T>,
): Promise<T> {
  if (block.blockHash === undefined || numbersOnly.has(client)) {
    return read({ blockNumber: block.blockNumber });
  }
  try {
    return await read({ blockHash: block.blockHash });
  } catch (error) {
    if (!refusesBlockHash(error) || !(await nodeRefusesBlockHashes(client))) throw error;
    if (!numbersOnly.has(client)) {
      numbersOnly.add(client);
      log.warn(
        { err: errorSummary(error) },
        "the node at RPC_URL refuses block hashes in eth_call (EIP-1898): reads name their block by number, and a node behind or ahead of it can answer from another block's state",
      );
    }
    return read({ blockNumber: block.blockNumber });
  }
}

async function nodeRefusesBlockHashes(client: PublicClient): Promise<boolean> {
  const latest = await client.getBlock({ blockTag: "latest" });
  try {
    await client.request({
      method: "eth_call",
      params: [{ to: zeroAddress }, { blockHash: latest.hash }],
    });
    return false;
  } catch (error) {
    return refusesBlockHash(error);
  }
}

/**
 * The node's answer says it does not take the block parameter's shape: geth-family "invalid
 * argument 1: ... unmarshal", JSON-RPC's invalid params. A block it does not hold is another
 * answer (-32001 "resource not found", -32000 "header not found"), transient by nature.
 */
const REFUSAL =
  /unmarshal|invalid (argument|params|block (number|tag|parameter))|unknown field|not supported/i;

function refusesBlockHash(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  if (error.walk((cause) => cause instanceof InvalidParamsRpcError)) return true;
  const answer = error.walk((cause) => cause instanceof RpcRequestError);
  return (
    answer instanceof RpcRequestError && (answer.code === -32602 || REFUSAL.test(answer.details))
  );
}
