/**
 * Which follow process leads: a lease in Redis (a key with a time to live) that the leader
 * renews and a standby takes once it lapses. Only the leader runs the follower (the follow
 * worker, its scheduler, the new-head watch); every follow process runs chunk workers. Ticks
 * stay safe without it (see docs/decisions/follow-lease.md): the lease saves the duplicate work
 * of followers racing for the same blocks, and says who leads. Takes its dependencies, so it
 * can be built alone.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { errorSummary } from "../../lib/log.ts";
import { withTimeout } from "../../lib/with-timeout.ts";

/** A follow process as the lease and `status` name it. */
export interface FollowMember {
  host: string;
  pid: number;
  /** Tells apart processes with the same host and pid (containers often start at pid 1). */
  id: string;
}

/** Renewals (and a standby's attempts) per lease period: a lease outlives three missed ones. */
const ROUNDS_PER_LEASE = 4;

const leaseKey = (prefix: string) => `${prefix}:follower:lease`;
const membersKey = (prefix: string) => `${prefix}:follower:members`;

/**
 * One round, atomic: list this process as a member for a lease period (scored by its expiry on
 * Redis's clock, so hosts' clocks never matter; a dead member drops out as a dead leader's lease
 * lapses), then renew the lease if it holds it, or take it if nobody does.
 * Returns 1 when this process holds the lease afterwards.
 */
const ROUND = `
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ms)
redis.call('ZADD', KEYS[2], ms + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[2], lease)
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], lease)
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', lease)
  return 1
end
return 0`;

/** Gives the lease up (only if held) and leaves the members: a standby takes over at once. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
return 0`;

export interface FollowLeaseDeps {
  redis: Redis;
  queuePrefix: string;
  /** FOLLOW_LEASE_MS: a dead leader's lease lapses at most this long after its death. */
  leaseMs: number;
  /** Starts the follower in this process: it now leads. */
  lead: () => Promise<void>;
  /** Stops the follower in this process (lets its tick finish): another may lead. */
  standBy: () => Promise<void>;
  log: Logger;
}

export function createFollowLease({
  redis,
  queuePrefix,
  leaseMs,
  lead,
  standBy,
  log,
}: FollowLeaseDeps) {
  const me: FollowMember = { host: hostname(), pid: process.pid, id: randomUUID().slice(0, 8) };
  const value = JSON.stringify(me);
  const keys = [leaseKey(queuePrefix), membersKey(queuePrefix)];
  const roundMs = Math.floor(leaseMs / ROUNDS_PER_LEASE);
  let leading = false;
  /** Until when this process may take itself for the leader: a lease after its last renewal. */
  let heldUntil = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let round: Promise<void> | undefined;
  let started = false;
  let stopped = false;
  /** The last failure, said once until it changes or a round succeeds. */
  let failure: string | undefined;

  async function holdOrTake(): Promise<boolean> {
    const sent = Date.now();
    try {
      // A round that cannot answer within half a lease is no renewal: the lease may lapse.
      const held = await withTimeout(
        redis.eval(ROUND, keys.length, ...keys, value, leaseMs) as Promise<number>,
        Math.floor(leaseMs / 2),
      );
      failure = undefined;
      if (held === 1) heldUntil = sent + leaseMs;
      return held === 1;
    } catch (error) {
      const summary = errorSummary(error);
      // A Redis away is said once, as REDIS_URL unreachable; anything else here once each.
      if (summary !== failure && redis.status === "ready") {
        failure = summary;
        log.warn({ err: summary }, "could not renew or take the follower lease");
      }
      // Unanswered: the lease may still be ours, but not past its time to live.
      return leading && Date.now() < heldUntil;
    }
  }

  /** Gives the lease up (if held) and leaves the members. */
  const release = () =>
    withTimeout(redis.eval(RELEASE, keys.length, ...keys, value), leaseMs).catch(() => {});

  async function once() {
    const held = await holdOrTake();
    if (held && !leading) {
      try {
        await lead();
        leading = true;
        log.info({ ...me, leaseMs }, "leading the follower");
      } catch (error) {
        // Given up, so a standby whose follower starts may lead; this one tries again later.
        log.warn({ err: errorSummary(error) }, "could not start the follower");
        await standBy().catch(() => {});
        await release();
      }
    } else if (!held && leading) {
      leading = false;
      log.warn({ ...me }, "lost the follower lease: standing by");
      await standBy();
    }
  }

  function next() {
    if (stopped) return;
    timer = setTimeout(() => {
      round = once()
        .catch((error) => log.warn({ err: errorSummary(error) }, "follower lease round failed"))
        .finally(next);
    }, roundMs);
  }

  return {
    /** Runs the first round (the follower starts here if nobody leads), then one per period. */
    async start() {
      started = true;
      round = once();
      await round;
      if (!leading) log.info({ ...me }, "standing by for the follower lease");
      next();
    },

    /** Stops the rounds, stops the follower if this process leads, then gives the lease up. */
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (!started) return;
      await round?.catch(() => {});
      if (leading) {
        leading = false;
        await standBy();
      }
      await release();
    },
  };
}

/** Who leads and who stands by, as Redis says now; reads only (for `status`). */
export async function readFollowLease(redis: Redis, queuePrefix: string) {
  const [[seconds, micros], holder, ttl] = await Promise.all([
    redis.time(),
    redis.get(leaseKey(queuePrefix)),
    redis.pttl(leaseKey(queuePrefix)),
  ]);
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const members = (await redis.zrangebyscore(membersKey(queuePrefix), now, "+inf")).map(
    (member) => JSON.parse(member) as FollowMember,
  );
  const leader = holder ? (JSON.parse(holder) as FollowMember) : undefined;
  return {
    leader: leader && { ...leader, leaseLeftMs: ttl },
    standbys: members.filter((member) => member.id !== leader?.id),
  };
}
