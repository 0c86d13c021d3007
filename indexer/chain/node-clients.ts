import type { PublicClient } from "viem";
import { MAX_RECEIPTS_ANSWER_BYTES } from "./block-receipts.ts";
import { type ChainClientOptions, createChainClient } from "./client.ts";

/** The clients one node is asked through, each call kind on the transport that suits it. */
export interface NodeClients {
  /** Reads and headers, JSON-RPC batched. */
  client: PublicClient;
  /** eth_getLogs goes alone: an oversized answer must not fail the requests batched with it. */
  logClient: PublicClient;
  /** eth_getBlockReceipts goes alone too, under its own answer cap (block-receipts.ts). */
  receiptsClient: PublicClient;
}

/** A node's clients, sharing its timeout, its call counting and its request budget. */
export function createNodeClients(
  url: string,
  options: Pick<ChainClientOptions, "timeoutMs" | "observer" | "budget">,
): NodeClients {
  return {
    client: createChainClient(url, options),
    logClient: createChainClient(url, { ...options, jsonRpcBatch: false }),
    receiptsClient: createChainClient(url, {
      ...options,
      jsonRpcBatch: false,
      maxAnswerBytes: MAX_RECEIPTS_ANSWER_BYTES,
    }),
  };
}
