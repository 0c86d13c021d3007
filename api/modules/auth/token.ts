/**
 * Finding the API token a request presents, by its SHA-256. The lookup is a CTE that the data
 * queries join, so a request checks its token and reads its data in one prepared statement (one
 * round trip), and a revoked token is refused from the very next request on: tokens are never
 * cached.
 */
import { timingSafeEqual } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { apiTokens } from "../../../db/schema.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import { fromDatabase } from "../../problems.ts";

/** The token whose hash is the statement's `hash` placeholder: zero or one row. */
export function tokenSource(db: Database) {
  return db.$with("token").as(
    db
      .select({
        tokenId: apiTokens.id,
        tokenHash: apiTokens.tokenHash,
        revoked: sql<boolean>`${apiTokens.revokedAt} is not null`.as("revoked"),
      })
      .from(apiTokens)
      .where(eq(apiTokens.tokenHash, sql.placeholder("hash"))),
  );
}

/** What a joined token row says, with the data version the same statement saw. */
export interface TokenRow {
  tokenId: number | null;
  tokenHash: string | null;
  revoked: boolean | null;
  indexedBlock: bigint | null;
  version: string | null;
}

export type TokenCheck = { indexedBlock: bigint | null; version: string } & (
  | { status: "valid"; tokenId: number }
  | { status: "unknown" | "revoked" }
);

export function judgeToken(row: TokenRow | undefined, hash: string): TokenCheck {
  const indexedBlock = row?.indexedBlock ?? null;
  const version = row?.version ?? "";
  // The index finds the row; the final comparison of the hashes does not exit early.
  const stored = Buffer.from(row?.tokenHash ?? "", "hex");
  const given = Buffer.from(hash, "hex");
  if (row?.tokenId == null || stored.length !== given.length || !timingSafeEqual(stored, given)) {
    return { status: "unknown", indexedBlock, version };
  }
  if (row.revoked) return { status: "revoked", indexedBlock, version };
  return { status: "valid", tokenId: row.tokenId, indexedBlock, version };
}

/** The token alone (with the data version): for 304s, cached bodies and refused requests. */
export function createTokenService(db: Database) {
  const checkpoint = indexedBlockSource(db);
  const token = tokenSource(db);
  const byHash = db
    .with(checkpoint, token)
    .select({
      indexedBlock: checkpoint.indexedBlock,
      version: checkpoint.version,
      tokenId: token.tokenId,
      tokenHash: token.tokenHash,
      revoked: token.revoked,
    })
    .from(checkpoint)
    .leftJoin(token, sql`true`)
    .prepare("api_token_by_hash");

  return {
    async check(hash: string): Promise<TokenCheck> {
      const [row] = await fromDatabase(byHash.execute({ hash }));
      return judgeToken(row, hash);
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
