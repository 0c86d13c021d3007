/** The API's pools, opened the same way by api/main.ts and the tests. */
import { createDatabase } from "../db/client.ts";
import { openRedis, type RedisTarget } from "../lib/redis.ts";
import { INDEXED_BLOCK_CHANNEL } from "./indexed-block.ts";
import { openReads } from "./reads.ts";

/** The channel migration 0009's trigger notifies with a token's id when it is revoked. */
const REVOKED_TOKEN_CHANNEL = "api_token_revoked";

export interface ConnectionOptions {
  databaseUrl: string;
  /** REDIS_URL, or the sentinels that name the primary. */
  redis: RedisTarget;
  poolSize: number;
}

export function openConnections({ databaseUrl, redis: redisTarget, poolSize }: ConnectionOptions) {
  // A short connect timeout: while Postgres is away, requests fail fast with 503 instead of
  // queueing; postgres.js opens new connections by itself once it is back.
  const database = createDatabase(databaseUrl, { max: poolSize, connectTimeout: 2 });
  // The hot reads' own pool, of the same size (api/reads.ts).
  const reads = openReads(databaseUrl, { max: poolSize, connectTimeout: 2 });
  // Fails fast while Redis is away (or failing over), so the rate limiter and the stream bound
  // count in the instance instead of holding requests.
  const redis = openRedis(redisTarget, "api");
  redis.on("error", () => {
    // Reported by the rate limiter when a command fails; ioredis reconnects by itself.
  });
  return {
    db: database.db,
    reads,
    redis,
    /**
     * LISTENs for the indexed block moving, on a connection of its own that postgres.js reopens
     * after an outage. Notifications sent while it was away are lost, so a (re)connect counts as
     * a move too.
     */
    watchIndexedBlock(onMove: () => void) {
      database.client.listen(INDEXED_BLOCK_CHANNEL, onMove, onMove).catch(() => {
        // Postgres unreachable at start: the cache then only serves bodies whose version the
        // request's own token check confirms, which stays correct.
      });
    },
    /**
     * LISTENs for revoked tokens (migration 0009's trigger; the payload is the token's id). A
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
      redis.disconnect();
      await Promise.all([reads.close(), database.close()]);
    },
  };
}
