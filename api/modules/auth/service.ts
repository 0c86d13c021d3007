/** Finds the API token a request presents, by its SHA-256, with the indexed block alongside. */
import { timingSafeEqual } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { apiTokens } from "../../../db/schema.ts";
import { hashToken } from "../../../db/tokens.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import { fromDatabase } from "../../problems.ts";

export type TokenCheck =
  | { status: "valid"; tokenId: number; indexedBlock: bigint | null }
  | { status: "unknown" | "revoked"; indexedBlock: bigint | null };

export function createAuthService(db: Database) {
  const checkpoint = indexedBlockSource(db);
  // No cache: a revoked token is refused from the next request on.
  const byHash = db
    .with(checkpoint)
    .select({
      indexedBlock: checkpoint.indexedBlock,
      id: apiTokens.id,
      tokenHash: apiTokens.tokenHash,
      revokedAt: apiTokens.revokedAt,
    })
    .from(checkpoint)
    .leftJoin(apiTokens, eq(apiTokens.tokenHash, sql.placeholder("hash")))
    .prepare("api_token_by_hash");

  return {
    async check(token: string): Promise<TokenCheck> {
      const hash = hashToken(token);
      const [row] = await fromDatabase(byHash.execute({ hash }));
      const indexedBlock = row?.indexedBlock ?? null;
      // The index finds the row; the final comparison of the hashes does not exit early.
      const stored = Buffer.from(row?.tokenHash ?? "", "hex");
      const given = Buffer.from(hash, "hex");
      if (!row?.id || stored.length !== given.length || !timingSafeEqual(stored, given)) {
        return { status: "unknown", indexedBlock };
      }
      if (row.revokedAt !== null) return { status: "revoked", indexedBlock };
      return { status: "valid", tokenId: row.id, indexedBlock };
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
