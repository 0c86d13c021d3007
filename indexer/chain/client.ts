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
    // Deployless multicall: works on any node and at any block, with or without Multicall3. The
    // calls ride in contract-creation code, which nodes cap at 49,152 bytes (EIP-3860), so the
    // batch stays well below that: viem counts the calls' own calldata, which aggregate3's
    // encoding grows about fivefold, next to the ~5.5 kB multicall code. The results come back
    // as the created code, capped at 24,576 bytes (EIP-170): ~160 bytes per uint result, so
    // about 80 calls per batch leaves room for short strings.
    batch: { multicall: { deployless: true, batchSize: 3_000 } },
    cacheTime: 0,
  });
}
