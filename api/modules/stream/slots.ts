/**
 * The bound on open streams per token, across every instance: each open stream holds a lease in
 * a Redis sorted set per token (`<prefix>:api:streams:<token id>`, member = `<incarnation>/<id>`,
 * score = lease end). Opening one drops the leases that ran out and those of instances no longer
 * alive (instances.ts), counts, and adds, in one script; an open stream renews its lease, and
 * closing removes it. A process killed -9 leaves its leases behind: they stop counting once its
 * heartbeat lapses (ALIVE_MS), or at once when it is restarted on the same host, port and slot.
 *
 * When Redis does not answer, each instance bounds its own streams instead (as the rate limiter
 * does), so N instances then admit up to N times the bound.
 */
import { randomUUID } from "node:crypto";
import type Redis from "ioredis";
import type { Logger } from "pino";
import { createInstances, NOW_LUA, REGISTER_LUA } from "./instances.ts";

/**
 * A lease outlives a missed renewal or two. It bounds what a live instance's lost release costs
 * (a Redis blip as the stream closed); a dead instance's leases stop counting with its heartbeat.
 */
export const LEASE_MS = 30_000;
const RENEW_MS = LEASE_MS / 3;

/** KEYS: live incarnations, names, the token's leases; ARGV[4..6]: bound, member, LEASE_MS. */
const ACQUIRE = `${REGISTER_LUA}
local at = now()
register(at)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', at)
for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local holder = string.match(member, '^([^/]+)/')
  if not holder or not alive(holder) then redis.call('ZREM', KEYS[3], member) end
end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[3], at + tonumber(ARGV[6]), ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[6])
return 1`;

/**
 * Not ZADD XX: a lease another instance dropped while this one was taken for dead (paused, cut
 * from Redis) comes back. A release cannot be undone by it: both go over one connection, in order.
 */
const RENEW = `${NOW_LUA}
redis.call('ZADD', KEYS[1], now() + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

export interface Slot {
  release(): void;
}

export function createStreamSlots(input: {
  redis: Redis;
  keyPrefix: string;
  maxPerToken: number;
  /** Which of the processes sharing this port this is (instances.ts). */
  processSlot?: number;
  log: Logger;
}) {
  const { redis, keyPrefix, maxPerToken, processSlot, log } = input;
  const instances = createInstances({ redis, keyPrefix, slot: processSlot });
  const local = new Map<number, number>();
  const keyOf = (tokenId: number) => `${keyPrefix}:api:streams:${tokenId}`;

  const countLocally = (tokenId: number, change: number) => {
    const count = (local.get(tokenId) ?? 0) + change;
    if (count <= 0) local.delete(tokenId);
    else local.set(tokenId, count);
  };

  return {
    /**
     * A slot for one more stream of this token, or undefined when it holds its bound. `port`:
     * where this instance listens, which names it (a restart on it replaces its dead self).
     */
    async acquire(tokenId: number, port: number | undefined): Promise<Slot | undefined> {
      const member = `${instances.incarnation}/${randomUUID()}`;
      const key = keyOf(tokenId);
      let shared = true;
      instances.beat(port);
      try {
        const [live, names, name, incarnation, aliveMs] = instances.scriptArguments();
        const granted = await redis.eval(
          ACQUIRE,
          3,
          live,
          names,
          key,
          name,
          incarnation,
          aliveMs,
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
            redis.eval(RENEW, 1, key, member, LEASE_MS).catch(() => {
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
    /** The process is stopping, its streams released: it no longer counts as alive. */
    retire: () => instances.retire(),
  };
}
