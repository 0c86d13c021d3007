import { createPublicClient, http, type PublicClient, type Transport } from "viem";
import { cappedAnswers } from "./capped-answers.ts";
import { requestedWaitMs, retryAfterMs } from "./rate-limits.ts";
import type { RequestBudget } from "./request-budget.ts";

/**
 * Told about every JSON-RPC call the client makes (after the transport's retries), and about
 * every HTTP answer (one per attempt; a batch carries up to 32 calls in one).
 */
export interface RpcObserver {
  call(method: string, outcome: "ok" | "error"): void;
  httpResponse(status: number): void;
}

export interface ChainClientOptions {
  /** Per-request timeout; a hung node must not hold a job forever. */
  timeoutMs?: number;
  retryCount?: number;
  /** JSON-RPC batching (on by default); off for calls whose answers may be huge. */
  jsonRpcBatch?: boolean;
  /** Counts calls by method (the indexer's metrics); the one place RPC calls are counted. */
  observer?: RpcObserver;
  /** The process's request budget (RPC_MAX_REQUESTS_PER_SECOND), shared by all its clients. */
  budget?: RequestBudget;
  /** The largest answer taken (capped-answers.ts); viem's 10 MiB when absent. */
  maxAnswerBytes?: number;
}

/**
 * The one place RPC calls are retried: viem's transport retries 429s (honouring Retry-After),
 * 5xx, timeouts and unreadable bodies with exponential backoff, and every attempt waits for the
 * process's request budget (see budgeted below). Jobs retry only what is still
 * failing after that, so the two delays do not multiply on every call.
 */
export const RPC_RETRY_COUNT = 6;
const RPC_RETRY_BASE_MS = 100;

/**
 * The transport's own backoff, for the one call that opts out of the transport's retries
 * (eth_getLogs, whose "range too large" answers must reach the log fetcher at once): wait as
 * long as the node asked (Retry-After, Infura's backoff_seconds), else back off exponentially.
 */
export function rpcRetryDelay({ count, error }: { count: number; error: Error }): number {
  return requestedWaitMs(error) ?? RPC_RETRY_BASE_MS * 2 ** count;
}

export function createChainClient(rpcUrl: string, options: ChainClientOptions = {}): PublicClient {
  const { observer, budget } = options;
  const transport = http(rpcUrl, {
    // Nodes cap a request body (anvil at 2 MiB, providers lower); a deployless multicall is
    // ~40 kB of JSON, so 32 requests per HTTP batch stay well under the cap. Under a budget a
    // batch also stays within what the budget lets leave at once: providers count its calls.
    batch:
      options.jsonRpcBatch === false
        ? false
        : { batchSize: Math.min(32, budget?.capacity ?? 32), wait: 0 },
    // Below the transport's retries, so a retried request waits for the budget like any other.
    // The answer's cap is applied there too (capped-answers.ts), so viem reads it in one piece.
    fetchFn: cappedAnswers(budget ? budgeted(budget) : fetch, options.maxAnswerBytes),
    maxResponseBodySize: false,
    retryCount: options.retryCount ?? RPC_RETRY_COUNT,
    retryDelay: RPC_RETRY_BASE_MS,
    timeout: options.timeoutMs ?? 15_000,
    onFetchResponse: observer && ((response) => observer.httpResponse(response.status)),
  });
  return createPublicClient({
    transport: observer ? observed(transport, observer) : transport,
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

/**
 * fetch, with each HTTP request waiting until the budget lets its calls leave, and a 429's
 * Retry-After holding back every call of the process. Calls are counted from the body's
 * `"method":` keys: a request carries only hex, addresses and tags besides them, and counting
 * them spares parsing multicall bodies of tens of kilobytes. The wait runs inside viem's
 * per-request timeout: it stays short because jobs await their calls (4 jobs' batches of half
 * a second of budget queue at once), but a budget far below what the jobs ask at once would
 * turn the wait into timeouts and retries (citizen_staking_rpc_request_errors_total shows them).
 */
function budgeted(budget: RequestBudget) {
  return async (input: string | URL | Request, init?: RequestInit) => {
    const body = typeof init?.body === "string" ? init.body : "";
    await budget.take(body.split('"method":').length - 1);
    const response = await fetch(input, init);
    if (response.status === 429) {
      budget.pause(retryAfterMs(response.headers.get("retry-after")) ?? RPC_RETRY_BASE_MS);
    }
    return response;
  };
}

/**
 * The transport with every call counted by method. Counted above the JSON-RPC batching, so a
 * batch of 32 calls counts 32, and above the retries, so a call retried counts once.
 */
function observed(transport: Transport, observer: RpcObserver): Transport {
  return (parameters) => {
    const inner = transport(parameters);
    // viem's request is generic over the RPC schema; this wrapper only reads the method name
    // and passes everything through unchanged, hence the cast back to the inner type.
    const request = (async (...args: Parameters<typeof inner.request>) => {
      try {
        const result = await inner.request(...args);
        observer.call(args[0].method, "ok");
        return result;
      } catch (error) {
        observer.call(args[0].method, "error");
        throw error;
      }
    }) as typeof inner.request;
    return { ...inner, request };
  };
}
