/**
 * The read API's bearer tokens. Only a SHA-256 of a token is stored: a leaked table does not
 * leak working tokens, and the API finds a token by hashing what it is given.
 */
import { randomBytes } from "node:crypto";
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { Database } from "./client.ts";
import { apiTokens } from "./schema.ts";

const TOKEN_PREFIX = "cs_";

/**
 * Hex SHA-256 of a token, the form kept in api_tokens.token_hash. Bun's one-shot hash: the API
 * hashes the token of every request, and node:crypto's createHash costs twice as much.
 */
export function hashToken(token: string): string {
  return Bun.SHA256.hash(token, "hex");
}

/**
 * Creates a token; the returned `token` is the only copy there will ever be. With
 * `expiresInSeconds` it stops working that long after now (the database's clock, the one the
 * API judges it by).
 */
export async function createToken(
  db: Database,
  label: string,
  { expiresInSeconds }: { expiresInSeconds?: number } = {},
) {
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const [row] = await db
    .insert(apiTokens)
    .values({
      label,
      tokenHash: hashToken(token),
      expiresAt:
        expiresInSeconds === undefined
          ? null
          : sql`now() + make_interval(secs => ${expiresInSeconds})`,
    })
    .returning({
      id: apiTokens.id,
      label: apiTokens.label,
      createdAt: apiTokens.createdAt,
      expiresAt: apiTokens.expiresAt,
    });
  return { ...row!, token };
}

export function listTokens(db: Database) {
  return db
    .select({
      id: apiTokens.id,
      label: apiTokens.label,
      createdAt: apiTokens.createdAt,
      revokedAt: apiTokens.revokedAt,
      expiresAt: apiTokens.expiresAt,
      expired: sql<boolean>`coalesce(${apiTokens.expiresAt} <= now(), false)`,
      lastUsedAt: apiTokens.lastUsedAt,
    })
    .from(apiTokens)
    .orderBy(asc(apiTokens.id));
}

/**
 * Revokes a token at once: the API checks tokens on every request, and the trigger of migration
 * 0009 tells every API instance to end the token's open streams. False when no live token has
 * that id.
 */
export async function revokeToken(db: Database, id: number): Promise<boolean> {
  const rows = await db
    .update(apiTokens)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)))
    .returning({ id: apiTokens.id });
  return rows.length > 0;
}

/** How far behind `last_used_at` may fall: one write per token per this long, at most. */
export const LAST_USED_PRECISION_SECONDS = 60;

/**
 * Records when tokens were last used, one statement for all of them. A token whose stored time
 * is less than LAST_USED_PRECISION_SECONDS older is left alone, so however many API instances
 * report it, a token's row is written at most once a minute.
 */
export async function recordTokenUse(db: Database, uses: Map<number, Date>): Promise<void> {
  if (uses.size === 0) return;
  const rows = [...uses].map(([id, at]) => sql`(${id}::int, ${at.toISOString()}::timestamptz)`);
  await db.execute(sql`
    update ${apiTokens} set last_used_at = used.at
    from (values ${sql.join(rows, sql`, `)}) as used(id, at)
    where ${apiTokens.id} = used.id
      and (${apiTokens.lastUsedAt} is null
        or ${apiTokens.lastUsedAt} < used.at - make_interval(secs => ${LAST_USED_PRECISION_SECONDS}))`);
}
