/**
 * A node saying the caller asks too fast, or has spent its quota: a wait, never a verdict on the
 * request. Providers word it each their own way, and over codes that also mean other things:
 * Infura answers its rate limits with -32005, EIP-1474's "limit exceeded", which it also gives a
 * log query that returns too many results, so the code alone tells nothing and the words decide.
 * Recorded with their sources in test/support/provider-wordings.ts (RATE_LIMITS).
 */
import { BaseError, HttpRequestError, RpcRequestError } from "viem";

/** Codes that mean a rate limit and nothing else: 429 as a JSON-RPC code, QuickNode's -32007. */
const RATE_LIMIT_CODES = new Set([429, -32007]);

const WORDINGS: readonly { provider: string; pattern: RegExp }[] = [
  { provider: "Infura", pattern: /request rate exceeded|daily request count exceeded/i },
  { provider: "Alchemy", pattern: /exceeded its compute units per second capacity/i },
  { provider: "QuickNode", pattern: /request limit reached/i },
];

/** Infura's suggested wait, in its error's data (`backoff_seconds`, seconds). */
const BACKOFF_SECONDS = /"backoff_seconds"\s*:\s*([0-9]+(?:\.[0-9]+)?)/;

/** Whether the failure is a rate limit or a spent quota (HTTP 429, or a provider's words). */
export function isRateLimited(error: unknown): boolean {
  return causesOf(error).some(
    (cause) =>
      ((cause instanceof HttpRequestError || cause instanceof RpcRequestError) &&
        cause.status === 429) ||
      (cause instanceof RpcRequestError && RATE_LIMIT_CODES.has(cause.code)) ||
      WORDINGS.some(({ pattern }) => pattern.test(textOf(cause))),
  );
}

/**
 * How long the node asked the caller to wait, in milliseconds, when it said: a Retry-After
 * header (any status), or Infura's `backoff_seconds`.
 */
export function requestedWaitMs(error: unknown): number | undefined {
  for (const cause of causesOf(error)) {
    if (cause instanceof HttpRequestError || cause instanceof RpcRequestError) {
      const header = retryAfterMs(cause.headers?.get("retry-after"));
      if (header !== undefined) return header;
    }
    const backoff = textOf(cause).match(BACKOFF_SECONDS);
    if (backoff) return Number(backoff[1]) * 1_000;
  }
  return undefined;
}

/** Retry-After in seconds or as an HTTP date (RFC 9110), in milliseconds from now. */
export function retryAfterMs(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1_000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function causesOf(error: unknown): unknown[] {
  if (!(error instanceof BaseError)) return error instanceof Error ? [error] : [];
  const causes: unknown[] = [];
  error.walk((cause) => {
    causes.push(cause);
    return false;
  });
  return causes;
}

/** The words a failure carries: its details (viem's) or message, and its data. */
function textOf(cause: unknown): string {
  if (!(cause instanceof Error)) return "";
  const { details, data } = cause as { details?: unknown; data?: unknown };
  const words = typeof details === "string" ? details : cause.message;
  return data === undefined ? words : `${words} ${JSON.stringify(data)}`;
}
