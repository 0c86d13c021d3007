/**
 * The API's pools, opened the same way by api/main.ts and the tests. Everything the API answers
 * is read from one database: DATABASE_READ_URL when set (a hot standby), else DATABASE_URL. The
 * primary (DATABASE_URL) is used for what a standby refuses: the token-use writes, and LISTEN for
 * revocations. Moves of the indexed block are heard from the database that is read: by LISTEN on
 * the primary, by polling on a standby (replica-watch.ts).
 */
import { createDatabase } from "../db/client.ts";
import { openRedis, type RedisTarget } from "../lib/redis.ts";
import { INDEXED_BLOCK_CHANNEL } from "./indexed-block.ts";
import { openReads } from "./reads.ts";
import { watchReplayedVersion } from "./replica-watch.ts";

/** The channel db/functions/notify_api_token_revoked.sql's trigger notifies with a token's id when it is revoked. */
const REVOKED_TOKEN_CHANNEL = "api_token_revoked";

export interface ConnectionOptions {
  /** The primary. */
  databaseUrl: string;
  /** A hot standby of it to read from; unset, the primary is read. */
  databaseReadUrl?: string;
  /** REDIS_URL, or the sentinels that name the primary. */
  redis: RedisTarget;
  poolSize: number;
}

export function openConnections({
  databaseUrl,
  databaseReadUrl,
  redis: redisTarget,
  poolSize,
}: ConnectionOptions) {
  // A short connect timeout: while Postgres is away, requests fail fast with 503 instead of
  // queueing; postgres.js opens new connections by itself once it is back.
  const database = createDatabase(databaseUrl, {
    // Beside a standby the primary only takes a write a minute, a lookup per revocation and
    // /readyz's checkpoint read (LISTEN has a connection of its own): one connection pipelines it.
    max: databaseReadUrl === undefined ? poolSize : 1,
    connectTimeout: 2,
  });
  const replica =
    databaseReadUrl === undefined
      ? undefined
      : createDatabase(databaseReadUrl, { max: poolSize, connectTimeout: 2 });
  const replayed = replica && watchReplayedVersion(replica.db);
  // The hot reads' own pool, of the same size (api/reads.ts).
  const reads = openReads(databaseReadUrl ?? databaseUrl, { max: poolSize, connectTimeout: 2 });
  // Fails fast while Redis is away (or failing over), so the rate limiter and the stream bound
  // count in the instance instead of holding requests.
  const redis = openRedis(redisTarget, "api");
  redis.on("error", () => {
    // Reported by the rate limiter when a command fails; ioredis reconnects by itself.
  });
  return {
    /** The database every answer is read from: the standby when there is one. */
    db: replica?.db ?? database.db,
    /** DATABASE_URL: token-use writes, and the revocation lookups that must not lag. */
    primary: database.db,
    reads,
    redis,
    /**
     * On a standby, polls what it has replayed (replica-watch.ts). Else LISTENs for the indexed
     * block moving, on a connection of its own that postgres.js reopens after an outage.
     * Notifications sent while it was away are lost, so a (re)connect counts as a move too.
     */
    watchIndexedBlock(onMove: () => void) {
      if (replayed) return replayed.watch(onMove);
      database.client.listen(INDEXED_BLOCK_CHANNEL, onMove, onMove).catch(() => {
        // Postgres unreachable at start: the cache then only serves bodies whose version the
        // request's own token check confirms, which stays correct.
      });
    },
    /**
     * LISTENs for revoked tokens (db/functions/notify_api_token_revoked.sql; the payload is the token's id). A
     * (re)connect calls back with no id: a revocation may have been missed, so open streams
     * check their tokens again.
     */
    watchRevokedTokens(onRevoked: (tokenId?: number) => void) {
      database.client
        .listen(
          REVOKED_TOKEN_CHANNEL,
          (payload) => onRevoked(Number(payload)),
          () => onRevoked(),
        )
        .catch(() => {
          // Postgres unreachable at start: streams cannot open without it either.
        });
    },
    async close() {
      replayed?.stop();
      redis.disconnect();
      await Promise.all([reads.close(), database.close(), replica?.close()]);
    },
  };
}
