import {
  BaseError,
  type Hex,
  HttpRequestError,
  InvalidParamsRpcError,
  keccak256,
  type PublicClient,
  RpcRequestError,
  stringToHex,
  TimeoutError,
  zeroAddress,
} from "viem";
import { errorSummary, logger } from "../../lib/log.ts";
import { behindAs, lacksBlock, NodeBehind } from "./node-behind.ts";

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
 * Whether each client's node takes block hashes: a capability of the node, the same for every
 * process, so a per-process memo (like finality.ts's) only saves each process its probe.
 */
const takesHashes = new WeakMap<PublicClient, Promise<boolean>>();
const log = logger("block-pin");

/** A hash no chain holds: a node that honours EIP-1898 must fail a call at it. */
const NO_SUCH_BLOCK = keccak256(stringToHex("citizen-staking: no such block"));

/**
 * Runs `read` at `block`, by hash when the block has one and the node takes hashes (probed once,
 * see nodeTakesBlockHashes). A node that refuses the hash parameter of one read is probed again:
 * if it now refuses hashes, this and later reads go by number; if it takes them, the refusal
 * was about this block and is thrown for the retry, never answered by number.
 */
export async function pinnedRead<T>(
  client: PublicClient,
  block: BlockAt,
  read: (at: BlockParameter) => Promise<T>,
): Promise<T> {
  const byNumber = () =>
    behindAs(block.blockNumber, () => read({ blockNumber: block.blockNumber }));
  if (block.blockHash === undefined || !(await takesBlockHashes(client))) return byNumber();
  try {
    return await read({ blockHash: block.blockHash });
  } catch (error) {
    // A node without the block (one behind a load balancer's others) waits for it.
    if (lacksBlock(error)) throw new NodeBehind(block.blockNumber, undefined, { cause: error });
    if (!refusesBlockHash(error)) throw error;
    takesHashes.delete(client);
    if (await takesBlockHashes(client)) throw error;
    return byNumber();
  }
}

/**
 * Whether reads given a block hash go by that hash on this client's node (the same memo
 * pinnedRead uses; probed on first use). Asked after a fetch's reads, it says how they went: a
 * read whose hash was refused turned the memo to false before it fell back to the number.
 */
export function readsGoByHash(client: PublicClient): Promise<boolean> {
  return takesBlockHashes(client);
}

function takesBlockHashes(client: PublicClient): Promise<boolean> {
  let known = takesHashes.get(client);
  if (!known) {
    known = nodeTakesBlockHashes(client);
    takesHashes.set(client, known);
    // A probe the network failed says nothing of the node: the next read probes again.
    known.catch(() => takesHashes.delete(client));
  }
  return known;
}

/**
 * Asks for an eth_call at a block hash no chain holds. A node that honours EIP-1898 fails it
 * ("resource not found", "header not found"); one that refuses the parameter, or answers it
 * anyway (some backends ignore the object and use `latest`), does not name blocks by hash, and
 * is read by number, said once in the logs. Transport trouble is thrown: it proves nothing.
 */
async function nodeTakesBlockHashes(client: PublicClient): Promise<boolean> {
  try {
    await client.request({
      method: "eth_call",
      params: [{ to: zeroAddress }, { blockHash: NO_SUCH_BLOCK }],
    });
  } catch (error) {
    if (isTransportTrouble(error)) throw error;
    if (!refusesBlockHash(error)) return true;
    log.warn(
      { err: errorSummary(error) },
      "the node at RPC_URL refuses block hashes in eth_call (EIP-1898): reads name their block by number, and a node behind or ahead of that block can answer from another state",
    );
    return false;
  }
  log.warn(
    "the node at RPC_URL answers an eth_call at a block hash it cannot hold (EIP-1898 ignored): reads name their block by number, and a node behind or ahead of that block can answer from another state",
  );
  return false;
}

function isTransportTrouble(error: unknown): boolean {
  if (!(error instanceof BaseError)) return true;
  return (
    error.walk((cause) => cause instanceof HttpRequestError || cause instanceof TimeoutError) !==
    null
  );
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
