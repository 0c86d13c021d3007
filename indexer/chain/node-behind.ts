import { BaseError, BlockNotFoundError, RpcRequestError } from "viem";

/**
 * The node does not have a block it was asked about yet: it is behind the block (a lone node
 * still syncing, a load balancer's backend a few blocks behind the others). That is not a reorg
 * and not a failure: nothing is rolled back or written on its answer, the job waits and asks
 * again. Only a block the node has, at a height whose hash is stored, can show a fork.
 */
export class NodeBehind extends Error {
  override name = "NodeBehind";
  constructor(
    /** The block asked for. */
    readonly block: bigint,
    /** The node's head, when it was asked. */
    readonly nodeHead?: bigint,
    options?: { cause?: unknown },
  ) {
    super(
      `the node at RPC_URL does not have block ${block} yet${nodeHead === undefined ? "" : ` (its head is ${nodeHead})`}; waiting for it`,
      options,
    );
  }
}

/**
 * How nodes say they lack a block they were asked about: geth's "header not found" and "header
 * for hash not found" (state reads), "unknown block" (eth_getLogs by hash), geth's and reth's
 * -32602 "block range extends beyond current head block" (eth_getLogs), anvil's
 * "BlockOutOfRangeError" and its -32001 "resource not found" (a block hash it lacks), Besu's
 * "block not found", Nethermind's "could not be found". A pruned state is another answer
 * (pruned-state.ts): the block is there, its state is not.
 */
const LACKS_BLOCK =
  /header (for hash )?not found|unknown block|block not found|block .*could not be found|beyond (the )?(current )?head|block ?out ?of ?range|resource not found/i;

/**
 * anvil says "BlockOutOfRangeError: block height is H but requested was R" both for a block above
 * its head (R > H: behind) and for a block whose state it pruned (R <= H: --prune-history); only
 * the first is a block it lacks.
 */
const ANVIL_OUT_OF_RANGE = /block height is (\d+) but requested was (\d+)/i;

/** Whether an answer's words say the node lacks the block (and not that it pruned its state). */
function saysLacksBlock(words: string): boolean {
  const anvil = ANVIL_OUT_OF_RANGE.exec(words);
  if (anvil) return BigInt(anvil[2]!) > BigInt(anvil[1]!);
  return LACKS_BLOCK.test(words);
}

/** Whether a failed request about a block failed because the node does not have the block. */
export function lacksBlock(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  if (error.walk((cause) => cause instanceof BlockNotFoundError)) return true;
  return (
    error.walk((cause) => {
      if (!(cause instanceof BaseError)) return false;
      const words = `${cause.shortMessage} ${cause.details}`;
      return saysLacksBlock(words) || (cause instanceof RpcRequestError && cause.code === -32001);
    }) !== null
  );
}

/** `read` with "the node lacks the block" answers thrown as NodeBehind for `block`. */
export async function behindAs<T>(block: bigint, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (lacksBlock(error)) throw new NodeBehind(block, undefined, { cause: error });
    throw error;
  }
}
