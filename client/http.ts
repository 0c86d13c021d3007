/**
 * The fetch every client request goes through (Eden Treaty's `fetcher` and the live stream's):
 * a 429 waits for its Retry-After and asks again, and GETs are conditional. The last body of each
 * URL is kept with its ETag, sent back as If-None-Match, and a 304 returns the kept body as a
 * 200, so callers never see a 304 and an unchanged answer costs the API no body.
 */

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface HttpOptions {
  /** The fetch underneath (the global one by default). */
  fetch?: Fetch;
  /** 429s waited out in a row before the last one is returned (it becomes an ApiProblem). */
  rateLimitRetries?: number;
  /** Bodies kept for conditional requests, the least recently used dropped first. */
  keptBodies?: number;
}

interface Kept {
  etag: string;
  body: string;
  headers: Headers;
}

const DEFAULT_RATE_LIMIT_RETRIES = 5;
const DEFAULT_KEPT_BODIES = 500;
/** A 429 without a readable Retry-After waits this long. */
const FALLBACK_WAIT_MS = 1_000;

/** Milliseconds a Retry-After asks for: delay-seconds or an HTTP date. */
export function retryAfterMs(value: string | null, now = Date.now()): number {
  if (value === null) return FALLBACK_WAIT_MS;
  if (/^[0-9]+$/.test(value.trim())) return Number(value.trim()) * 1_000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? FALLBACK_WAIT_MS : Math.max(0, date - now);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** fetch, waiting out 429s (Retry-After) up to `retries` times. */
export async function fetchWaitingOutRateLimits(
  fetcher: Fetch,
  url: string,
  init: RequestInit,
  retries = DEFAULT_RATE_LIMIT_RETRIES,
): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetcher(url, init);
    if (response.status !== 429 || attempt >= retries || init.signal?.aborted) return response;
    await response.body?.cancel();
    await pause(retryAfterMs(response.headers.get("retry-after")), init.signal);
  }
}

export function createHttp(options: HttpOptions = {}): Fetch {
  const fetcher = options.fetch ?? ((input, init) => fetch(input, init));
  const capacity = options.keptBodies ?? DEFAULT_KEPT_BODIES;
  const kept = new Map<string, Kept>();

  return async (input, init = {}) => {
    const url = input instanceof Request ? input.url : input.toString();
    const method = (init.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const headers = new Headers(init.headers);
    // Eden Treaty labels even a bodiless GET as JSON; a browser would then preflight a header
    // the API does not allow across origins.
    if (method === "GET" || method === "HEAD") headers.delete("content-type");
    const held = method === "GET" ? kept.get(url) : undefined;
    if (held !== undefined && !headers.has("if-none-match")) {
      headers.set("if-none-match", held.etag);
    }
    const response = await fetchWaitingOutRateLimits(
      fetcher,
      url,
      { ...init, method, headers },
      options.rateLimitRetries,
    );
    if (method !== "GET") return response;
    if (response.status === 304 && held !== undefined) {
      kept.delete(url);
      kept.set(url, held);
      // The 304's own headers (X-Indexed-Block, Cache-Control) are the fresher ones.
      const merged = new Headers(held.headers);
      for (const [name, value] of response.headers) merged.set(name, value);
      return new Response(held.body, { status: 200, headers: merged });
    }
    const etag = response.headers.get("etag");
    if (response.status !== 200 || etag === null) return response;
    const body = await response.text();
    kept.delete(url);
    kept.set(url, { etag, body, headers: new Headers(response.headers) });
    if (kept.size > capacity) kept.delete(kept.keys().next().value!);
    return new Response(body, { status: 200, headers: response.headers });
  };
}
