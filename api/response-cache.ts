/**
 * An optional in-process cache of response bodies. Each entry remembers the data version it was
 * read at, and is used only when the request's own token check (same round trip) reports that
 * version again: an instance that missed a notification still never serves an old body. The
 * NOTIFY that a moved checkpoint sends (db/functions/notify_indexed_block.sql) empties the cache on every instance at
 * once, so old versions do not hold memory.
 *
 * Bounded by entry count; when full, the oldest entry goes (Map keeps insertion order).
 */
export interface CachedResponse {
  version: string;
  etag: string;
  body: string;
}

export function createResponseCache(maxEntries: number) {
  const entries = new Map<string, CachedResponse>();
  // For the metrics: lookups that found an entry, and those that did not.
  const lookups = { hits: 0, misses: 0 };
  return {
    enabled: maxEntries > 0,
    maxEntries,
    get(resource: string): CachedResponse | undefined {
      const entry = entries.get(resource);
      if (entry === undefined) lookups.misses++;
      else lookups.hits++;
      return entry;
    },
    put(resource: string, response: CachedResponse): void {
      if (maxEntries <= 0) return;
      entries.delete(resource);
      if (entries.size >= maxEntries) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
      entries.set(resource, response);
    },
    /** The indexed block moved: nothing cached is current any more. */
    clear(): void {
      entries.clear();
    },
    get size(): number {
      return entries.size;
    },
    get lookups(): Readonly<typeof lookups> {
      return lookups;
    },
  };
}

export type ResponseCache = ReturnType<typeof createResponseCache>;
