/**
 * The read API's bearer tokens. Only a SHA-256 of a token is stored: a leaked table does not
 * leak working tokens, and the API finds a token by hashing what it is given.
 */
import { createHash, randomBytes } from "node:crypto";
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { Database } from "./client.ts";
import { apiTokens } from "./schema.ts";

const TOKEN_PREFIX = "cs_";

/** Hex SHA-256 of a token, the form kept in api_tokens.token_hash. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Creates a token; the returned `token` is the only copy there will ever be. */
export async function createToken(db: Database, label: string) {
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const [row] = await db
    .insert(apiTokens)
    .values({ label, tokenHash: hashToken(token) })
    .returning({ id: apiTokens.id, label: apiTokens.label, createdAt: apiTokens.createdAt });
  return { ...row!, token };
}

export function listTokens(db: Database) {
  return db
    .select({
      id: apiTokens.id,
      label: apiTokens.label,
      createdAt: apiTokens.createdAt,
      revokedAt: apiTokens.revokedAt,
    })
    .from(apiTokens)
    .orderBy(asc(apiTokens.id));
}

/** Revokes a token at once (the API does not cache tokens). False when no live token has that id. */
export async function revokeToken(db: Database, id: number): Promise<boolean> {
  const rows = await db
    .update(apiTokens)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)))
    .returning({ id: apiTokens.id });
  return rows.length > 0;
}
