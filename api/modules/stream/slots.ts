/**
 * The bound on open streams per token, across every instance: each open stream holds a lease in
 * a Redis sorted set per token (`<prefix>:api:streams:<token id>`, member = stream, score = lease
 * end). Opening one drops expired leases, counts, and adds, in one script; an open stream renews
 * its lease, and closing removes it. A crashed instance's leases simply run out.
 *
 * When Redis does not answer, each instance bounds its own streams instead (as the rate limiter
 * does), so N instances then admit up to N times the bound.
 */
import { randomUUID } from "node:crypto";
import type Redis from "ioredis";
import type { Logger } from "pino";

/** A lease outlives a missed renewal or two; a crashed instance's streams free up after it. */
export const LEASE_MS = 30_000;
const RENEW_MS = LEASE_MS / 3;

const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

export interface Slot {
  release(): void;
}

export function createStreamSlots(input: {
  redis: Redis;
  keyPrefix: string;
  maxPerToken: number;
  log: Logger;
}) {
  const { redis, keyPrefix, maxPerToken, log } = input;
  const local = new Map<number, number>();
  const keyOf = (tokenId: number) => `${keyPrefix}:api:streams:${tokenId}`;

  const countLocally = (tokenId: number, change: number) => {
    const count = (local.get(tokenId) ?? 0) + change;
    if (count <= 0) local.delete(tokenId);
    else local.set(tokenId, count);
  };

  return {
    /** A slot for one more stream of this token, or undefined when it holds its bound. */
    async acquire(tokenId: number): Promise<Slot | undefined> {
      const member = randomUUID();
      const key = keyOf(tokenId);
      let shared = true;
      try {
        const now = Date.now();
        const granted = await redis.eval(
          ACQUIRE,
          1,
          key,
          now,
          now + LEASE_MS,
          maxPerToken,
          member,
          LEASE_MS,
        );
        if (Number(granted) !== 1) return undefined;
      } catch (error) {
        log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "stream bound cannot reach Redis; this instance bounds its own streams",
        );
        if ((local.get(tokenId) ?? 0) >= maxPerToken) return undefined;
        shared = false;
      }
      countLocally(tokenId, 1);
      const renew = shared
        ? setInterval(() => {
            redis
              .zadd(key, "XX", Date.now() + LEASE_MS, member)
              .then(() => redis.pexpire(key, LEASE_MS))
              .catch(() => {
                // The lease runs out by itself if Redis stays away; nothing to do here.
              });
          }, RENEW_MS)
        : undefined;
      renew?.unref();
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          clearInterval(renew);
          countLocally(tokenId, -1);
          if (shared) redis.zrem(key, member).catch(() => {});
        },
      };
    },
  };
}
