/**
 * Finding the API token a request presents, by its SHA-256. The lookup is a CTE that the data
 * queries join, so a request checks its token and reads its data in one prepared statement (one
 * round trip), and a revoked or expired token is refused from the very next request on: tokens
 * are never cached. Expiry is judged by the database's clock, the same for every instance.
 */
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
        expired: sql<boolean>`coalesce(${apiTokens.expiresAt} <= now(), false)`.as("expired"),
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
  expired: boolean | null;
  /** Milliseconds until the token expires, by the database's clock; null when it never does. */
  expiresInMs?: number | null;
  /** A bigint, or its decimal string from a raw statement (api/raw-statement.ts). */
  indexedBlock: bigint | string | null;
  version: string | null;
}

export type TokenCheck = { indexedBlock: bigint | null; version: string } & (
  | { status: "valid"; tokenId: number; expiresInMs: number | null }
  | { status: "unknown" | "revoked" | "expired" }
);

export function judgeToken(row: TokenRow | undefined, hash: string): TokenCheck {
  const indexedBlock = row?.indexedBlock == null ? null : BigInt(row.indexedBlock);
  const version = row?.version ?? "";
  // A plain comparison, not a constant-time one: both sides are SHA-256 digests (of what the
  // client sent, and of an issued token), so how soon they differ says nothing about any token,
  // and the index lookup that found the row is not constant-time either.
  if (row?.tokenId == null || row.tokenHash !== hash) {
    return { status: "unknown", indexedBlock, version };
  }
  if (row.revoked) return { status: "revoked", indexedBlock, version };
  if (row.expired) return { status: "expired", indexedBlock, version };
  const expiresInMs = row.expiresInMs ?? null;
  return { status: "valid", tokenId: row.tokenId, expiresInMs, indexedBlock, version };
}

/**
 * The token alone (with the data version): for 304s and cached bodies. Checks are batched: while
 * one query is in flight, the checks that arrive wait and then go together in the next one
 * (`token_hash = any($1)`), so under load a cache hit costs a fraction of a round trip. Every
 * check is still a read made after its request arrived, so a revoked token is refused from the
 * next request on (on a standby: once replayed, and from its notification on, see
 * revocations.ts). Checks read `db`, the database answers come from, for the data version;
 * `refusedAmong` reads the primary, which a revocation reaches first.
 */
export function createTokenService(db: Database, primary: Database = db) {
  const checkpoint = indexedBlockSource(db);
  const byHashes = db
    .with(checkpoint)
    .select({
      indexedBlock: checkpoint.indexedBlock,
      version: checkpoint.version,
      tokenId: apiTokens.id,
      tokenHash: apiTokens.tokenHash,
      revoked: sql<boolean>`${apiTokens.revokedAt} is not null`,
      expired: sql<boolean>`coalesce(${apiTokens.expiresAt} <= now(), false)`,
      expiresInMs: sql<
        number | null
      >`(extract(epoch from ${apiTokens.expiresAt} - now()) * 1000)::float8`,
    })
    .from(checkpoint)
    .leftJoin(apiTokens, sql`${apiTokens.tokenHash} = any(${sql.placeholder("hashes")})`)
    .prepare("api_tokens_by_hashes");

  type Waiter = { resolve: (check: TokenCheck) => void; reject: (error: unknown) => void };
  let waiting = new Map<string, Waiter[]>();
  let inFlight = false;

  async function drain() {
    inFlight = true;
    while (waiting.size > 0) {
      const batch = waiting;
      waiting = new Map();
      try {
        const rows = await fromDatabase(byHashes.execute({ hashes: [...batch.keys()] }));
        for (const [hash, waiters] of batch) {
          const row = rows.find((candidate) => candidate.tokenHash === hash) ?? {
            ...rows[0],
            tokenId: null,
            tokenHash: null,
            revoked: null,
            expired: null,
          };
          const check = judgeToken(row as TokenRow, hash);
          for (const waiter of waiters) waiter.resolve(check);
        }
      } catch (error) {
        for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(error);
      }
    }
    inFlight = false;
  }

  const refused = primary
    .select({ id: apiTokens.id })
    .from(apiTokens)
    .where(
      sql`${apiTokens.id} = any(${sql.placeholder("ids")}::int[])
        and (${apiTokens.revokedAt} is not null or ${apiTokens.expiresAt} <= now())`,
    )
    .prepare("api_tokens_refused");

  return {
    /** Of these token ids, those revoked or expired now (after a lost notification, say). */
    async refusedAmong(ids: number[]): Promise<number[]> {
      if (ids.length === 0) return [];
      const rows = await fromDatabase(refused.execute({ ids }));
      return rows.map((row) => row.id);
    },
    check(hash: string): Promise<TokenCheck> {
      return new Promise((resolve, reject) => {
        const waiters = waiting.get(hash);
        if (waiters) waiters.push({ resolve, reject });
        else waiting.set(hash, [{ resolve, reject }]);
        if (!inFlight) void drain();
      });
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
