/**
 * Scratch Redis key prefixes, one per test file or benchmark run, deleted after. Shared by
 * test/ and bench/.
 */
import { config } from "../lib/config.ts";
import { openRedis } from "../lib/redis.ts";

const REDIS_URL = config.redis.url;

/** A BullMQ key prefix of this test run's own; `clean()` deletes every key under it. */
export function createScratchRedisPrefix(label = "test") {
  const prefix = `cs-${label}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  return {
    url: REDIS_URL,
    prefix,
    async clean() {
      const redis = openRedis({ url: REDIS_URL }, "queues");
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== "0");
      redis.disconnect();
    },
  };
}
