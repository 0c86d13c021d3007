/**
 * When each token was last used, without a write per request: admitted requests are noted here,
 * and every `flushEveryMs` the tokens seen since go to Postgres in one statement
 * (db/tokens.ts recordTokenUse, which also skips a token written less than a minute ago, so
 * several instances together still write a token's row at most once a minute). A crash loses at
 * most one interval of notes, which only makes `last_used_at` look a little older.
 */
import type { Logger } from "pino";
import type { Database } from "../../../db/client.ts";
import { LAST_USED_PRECISION_SECONDS, recordTokenUse } from "../../../db/tokens.ts";

export const DEFAULT_USAGE_FLUSH_MS = LAST_USED_PRECISION_SECONDS * 1000;

export function createTokenUsage({
  db,
  flushEveryMs = DEFAULT_USAGE_FLUSH_MS,
  log,
}: {
  db: Database;
  flushEveryMs?: number;
  log: Logger;
}) {
  /** Token id → the time of its latest admitted request (ms), since the last flush. */
  let seen = new Map<number, number>();

  async function flush() {
    if (seen.size === 0) return;
    const batch = seen;
    seen = new Map();
    try {
      await recordTokenUse(db, new Map([...batch].map(([id, at]) => [id, new Date(at)])));
    } catch (error) {
      // Postgres away: keep the notes for the next try (a newer use of a token wins).
      for (const [id, at] of batch) if (!seen.has(id)) seen.set(id, at);
      log.warn(
        { err: error instanceof Error ? error.message : String(error) },
        "cannot record when tokens were last used; retrying at the next flush",
      );
    }
  }

  const timer = setInterval(() => void flush(), flushEveryMs);
  timer.unref();

  return {
    /** A request of this token was admitted now. */
    used(tokenId: number) {
      seen.set(tokenId, Date.now());
    },
    /** Writes what is noted; then stops. */
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

export type TokenUsage = ReturnType<typeof createTokenUsage>;
