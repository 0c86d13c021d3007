import { describe, expect, test } from "bun:test";
import { RpcRequestError } from "viem";
import { lacksBlock } from "../../indexer/chain/node-behind.ts";
import { isPrunedState } from "../../indexer/chain/pruned-state.ts";

/** A node's error answer as viem raises it. */
const answer = (message: string, code = -32000) =>
  new RpcRequestError({ body: {}, error: { code, message }, url: "http://node" });

describe("a node behind a block against a node that pruned its state", () => {
  test("anvil above its head lacks the block: the indexer waits for it", () => {
    const error = answer("BlockOutOfRangeError: block height is 100 but requested was 105");
    expect(lacksBlock(error)).toBe(true);
    expect(isPrunedState(error)).toBe(false);
  });

  test("anvil below its kept states (--prune-history) pruned it: an archive node is needed", () => {
    const error = answer("BlockOutOfRangeError: block height is 100 but requested was 5");
    expect(lacksBlock(error)).toBe(false);
    expect(isPrunedState(error)).toBe(true);
  });

  test("geth's words for each", () => {
    expect(lacksBlock(answer("header not found"))).toBe(true);
    expect(isPrunedState(answer("missing trie node 1234 (path )"))).toBe(true);
    expect(lacksBlock(answer("missing trie node 1234 (path )"))).toBe(false);
  });
});
