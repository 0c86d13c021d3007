import { createPublicClient, http, type PublicClient } from "viem";

export interface ChainClientOptions {
  /** Per-request timeout; a hung node must not hold a job forever. */
  timeoutMs?: number;
  retryCount?: number;
}

/**
 * The one place RPC calls are retried: viem's transport retries 429s (honouring Retry-After),
 * 5xx, timeouts and unreadable bodies with exponential backoff. Jobs retry only what is still
 * failing after that, so the two delays do not multiply on every call.
 */
export function createChainClient(rpcUrl: string, options: ChainClientOptions = {}): PublicClient {
  return createPublicClient({
    transport: http(rpcUrl, {
      batch: { batchSize: 200, wait: 0 },
      retryCount: options.retryCount ?? 6,
      retryDelay: 100,
      timeout: options.timeoutMs ?? 15_000,
    }),
    // Deployless multicall: works on any node and at any block, with or without Multicall3.
    batch: { multicall: { deployless: true, batchSize: 64_000 } },
    cacheTime: 0,
  });
}
