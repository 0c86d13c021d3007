import { BaseError } from "viem";

/**
 * How nodes say they no longer hold the state at a block (a full node keeps only its last 128
 * or so): geth's missing trie node (hash and path schemes), erigon 3's history that is "not
 * available", reth's "is pruned", Nethermind's "No state available for block", OpenEthereum's
 * state pruning. Recorded with their sources in test/support/provider-wordings.ts.
 */
const PRUNED_STATE =
  /missing trie node|state at block #?\d+ is pruned|no state available for block|data before txNum=\d+ is not available|historical state .* is not available|running with state pruning/i;

/**
 * anvil with --prune-history answers a read below its kept states with "BlockOutOfRangeError:
 * block height is H but requested was R", R <= H (R > H is a block above its head: node-behind.ts).
 */
const ANVIL_PRUNED = /block height is (\d+) but requested was (\d+)/i;

function saysPruned(text: string): boolean {
  const anvil = ANVIL_PRUNED.exec(text);
  if (anvil && BigInt(anvil[2]!) <= BigInt(anvil[1]!)) return true;
  return PRUNED_STATE.test(text);
}

/** Whether a read failed because the node does not keep state that old (not an archive node). */
export function isPrunedState(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const texts: string[] = [];
  const collect = (cause: unknown) => {
    if (cause instanceof Error) {
      texts.push(cause.message, String((cause as { details?: unknown }).details ?? ""));
    }
    return false;
  };
  if (error instanceof BaseError) error.walk(collect);
  else collect(error);
  return saysPruned(texts.join(" "));
}
