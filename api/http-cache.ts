/**
 * Conditional GETs for a dashboard that polls: every answer about indexed data is fixed by the
 * data version it was read at (the indexed block and the checkpoint's write time, see
 * indexed-block.ts) and by the resource, so the ETag is made of the two and a poll that finds
 * the same ETag gets a 304 with no body.
 */

/**
 * Private: the answer depends on a bearer token, so no shared cache may keep it. no-cache: a
 * browser may keep it but must ask again each time, which costs a 304 while nothing is new, so a
 * dashboard is never a block behind.
 */
export const CACHE_CONTROL = "private, no-cache";

/**
 * An answer as of a block at or below the finality boundary never changes: a year, the longest
 * max-age RFC 9111 suggests, and `immutable` so a browser does not even revalidate on reload.
 * Still private: it needs a token.
 */
export const IMMUTABLE_CACHE_CONTROL = "private, max-age=31536000, immutable";

/**
 * The ETag of a final answer names its block rather than the data version, which moves with
 * every indexed block: If-None-Match with it gets a 304 for good.
 */
export function immutableEtagFor(block: bigint, resource: string): string {
  return `"block-${block}.${Bun.hash(resource).toString(36)}"`;
}

/** A strong ETag: the same version and resource always give the same bytes. */
export function etagFor(version: string, resource: string): string {
  return `"${version}.${Bun.hash(resource).toString(36)}"`;
}

/**
 * RFC 9110 §13.1.2: If-None-Match uses the weak comparison, and `*` matches any current
 * representation, so `*` counts only once the resource is known to exist (`exists`).
 */
export function noneMatch(header: string | null, etag: string, exists: boolean): boolean {
  if (header === null) return false;
  for (const candidate of header.split(",")) {
    const tag = candidate.trim();
    if (tag === "*" ? exists : (tag.startsWith("W/") ? tag.slice(2) : tag) === etag) return true;
  }
  return false;
}
