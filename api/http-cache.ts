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
 * The ETag of an answer as of a final block (at or below the finality boundary): its block, its
 * resource and its body. The rows of a final block do not change, but every record carries the
 * citizen's current name and image, which `refresh-metadata` may change, so no answer is
 * immutable and the ETag follows the body itself. It holds across data versions as long as the
 * body is the same: a chart of old blocks revalidates for a 304 after each new block.
 */
export function finalEtagFor(block: bigint, resource: string, body: string): string {
  return `"block-${block}.${Bun.hash(resource).toString(36)}.${Bun.hash(body).toString(36)}"`;
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
