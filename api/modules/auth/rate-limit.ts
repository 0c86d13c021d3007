/**
 * Per-token fixed-window rate limit (one window a minute unless set) that never waits on Redis. Each
 * instance decides from its own counts: what Redis reported at the last sync, plus what it has
 * admitted since. In the background, every SYNC_EVERY_MS, it sends its new counts to Redis (one
 * INCRBY per active token, all in one pipeline, on `<prefix>:api:rate:<token id>:<window>`) and
 * learns the total of every instance back.
 *
 * So one instance alone never admits more than the limit in a window, and N instances together
 * admit at most the limit plus what the others admit for that token between two syncs (at most
 * N - 1 times one sync interval's worth). A fixed window lets a burst of up to twice the limit
 * straddle a window boundary; that is accepted for one key per token and window.
 *
 * When Redis does not answer, each instance goes on limiting with its own counts (N instances
 * then admit up to N times the limit) and a warning is logged at most every 10 s.
 */
import type Redis from "ioredis";
import type { Logger } from "pino";

/** The window operators configure (RATE_LIMIT_PER_MINUTE); only tests shorten it. */
export const RATE_WINDOW_MS = 60_000;
const WARN_EVERY_MS = 10_000;
export const SYNC_EVERY_MS = 100;
const ADD_HITS = `
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2], 'NX')
return count`;

export interface RateLimit {
  perWindow: number;
  windowMs: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiterOptions {
  redis: Redis;
  /** Keys live under `<keyPrefix>:api:rate:`. */
  keyPrefix: string;
  /** Requests a token may make in one window. */
  perWindow: number;
  /** The window's length; RATE_WINDOW_MS (a minute) unless set. */
  windowMs?: number;
  log: Logger;
}

interface TokenCount {
  /** Every instance's hits in this window, as Redis said at the last sync (ours included). */
  known: number;
  /** Hits this instance admitted since its last sync. */
  pending: number;
}

export function createRateLimiter({
  redis,
  keyPrefix,
  perWindow,
  windowMs = RATE_WINDOW_MS,
  log,
}: RateLimiterOptions) {
  let window = -1;
  let counts = new Map<number, TokenCount>();
  let lastWarning = 0;
  let syncing = false;

  async function sync() {
    if (syncing || counts.size === 0) return;
    // A window that has ended needs nothing more: its key expires by itself. Dropping it also
    // stops the syncing of an idle instance.
    if (Math.floor(Date.now() / windowMs) !== window) {
      counts = new Map();
      return;
    }
    syncing = true;
    const syncedWindow = window;
    const sent = [...counts].map(([tokenId, count]) => ({ tokenId, count, hits: count.pending }));
    try {
      const pipeline = redis.pipeline();
      for (const { tokenId, hits } of sent) {
        pipeline.eval(
          ADD_HITS,
          1,
          `${keyPrefix}:api:rate:${tokenId}:${syncedWindow}`,
          hits,
          windowMs,
        );
      }
      const replies = (await pipeline.exec()) ?? [];
      const totals = sent.map((_, index) => {
        const [error, total] = replies[index] ?? [new Error("Redis gave no reply")];
        if (error) throw error;
        return Number(total);
      });
      sent.forEach(({ count, hits }, index) => {
        count.pending -= hits;
        if (syncedWindow === window) count.known = totals[index]!;
      });
    } catch (error) {
      const now = Date.now();
      if (now - lastWarning >= WARN_EVERY_MS) {
        lastWarning = now;
        log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "rate limiter cannot reach Redis; each instance limits on its own counts",
        );
      }
    } finally {
      syncing = false;
    }
  }

  const timer = setInterval(() => void sync(), SYNC_EVERY_MS);
  timer.unref();

  return {
    /** The limit this limiter holds tokens to, for the refusal's words. */
    limit: { perWindow, windowMs } satisfies RateLimit,
    /** Decides at once, from this instance's counts; never waits on Redis. */
    hit(tokenId: number, now = Date.now()): RateDecision {
      const current = Math.floor(now / windowMs);
      if (current !== window) {
        window = current;
        counts = new Map();
      }
      let count = counts.get(tokenId);
      if (!count) {
        count = { known: 0, pending: 0 };
        counts.set(tokenId, count);
      }
      if (count.known + count.pending >= perWindow) {
        const windowEnd = (window + 1) * windowMs;
        return {
          allowed: false,
          retryAfterSeconds: Math.max(1, Math.ceil((windowEnd - now) / 1000)),
        };
      }
      count.pending++;
      return { allowed: true };
    },
    /** Sends the counts not yet synced; then stops syncing. */
    async close() {
      clearInterval(timer);
      await sync();
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
