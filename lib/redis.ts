/**
 * Every Redis connection is opened here: to REDIS_URL, or, with REDIS_SENTINELS, to whichever
 * server the sentinels name primary. So a failover reaches every user alike: the queues and the
 * indexer's own keys, the API's rate limit and stream leases, the start-up checks and the CLI.
 */
import IORedis, { type Redis, type RedisOptions } from "ioredis";
import { safeUrl } from "./error-cause.ts";
import type { Refusals } from "./outages.ts";

export interface RedisSentinel {
  /** Sentinels asked for the primary, in turn; any one that answers is enough. */
  hosts: { host: string; port: number }[];
  /** The master group name they monitor (`sentinel monitor <name> …`). */
  name: string;
  /** The sentinels' own password (`requirepass` in sentinel.conf), when they have one. */
  password?: string;
}

/** Where Redis is. With `sentinel`, only the URL's user, password and database are used. */
export interface RedisTarget {
  url: string;
  sentinel?: RedisSentinel;
}

/**
 * The connections each kind of user needs:
 * - `queues`: BullMQ and the indexer's claims and cursors. A command waits through an outage or
 *   a failover and is sent again once connected (BullMQ requires maxRetriesPerRequest null for
 *   workers): a process keeps its work instead of failing it.
 * - `api`: the API's rate limit and stream leases. Nothing waits: no offline queue, one retry, a
 *   short command timeout, so a request is never held on Redis; both fall back to counting in
 *   the instance while Redis is away.
 * - `look`: a command that reads once after checking Redis (status): a read fails rather than
 *   waits, should Redis go away after the check.
 */
const USES = {
  queues: { maxRetriesPerRequest: null, enableReadyCheck: true },
  api: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 250 },
  look: { maxRetriesPerRequest: 1 },
} as const satisfies Record<string, RedisOptions>;

export type RedisUse = keyof typeof USES;

export function openRedis(target: RedisTarget, use: RedisUse): Redis {
  return connect(target, USES[use]);
}

/**
 * A connection for a single bounded try (start-up checks): nothing is retried, neither the
 * server nor the sentinels, and nothing waits longer than `timeoutMs`. Call `connect()`.
 */
export function openRedisOnce(target: RedisTarget, timeoutMs: number): Redis {
  return connect(target, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    sentinelRetryStrategy: () => null,
    enableOfflineQueue: false,
  });
}

function connect(target: RedisTarget, options: RedisOptions): Redis {
  const { sentinel } = target;
  if (!sentinel) return new IORedis(target.url, options);
  return new IORedis(target.url, {
    sentinels: sentinel.hosts,
    name: sentinel.name,
    sentinelPassword: sentinel.password,
    // Each (re)connect asks the sentinels for the primary and checks the server's role (the
    // ready check), so a process follows a failover by reconnecting. A connection that outlived
    // its primary's demotion answers writes with READONLY: reconnect and send again (a refused
    // write wrote nothing).
    enableReadyCheck: true,
    reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 2 : false),
    ...options,
  });
}

/** The variable an operator checks when Redis is away: the sentinels when they are used. */
export function redisVariable(target: RedisTarget): "REDIS_SENTINELS" | "REDIS_URL" {
  return target.sentinel ? "REDIS_SENTINELS" : "REDIS_URL";
}

/** Where Redis is, for a log line or an error: no password, no database. */
export function describeRedis(target: RedisTarget): string {
  const { sentinel } = target;
  if (!sentinel) return `REDIS_URL (${safeUrl(target.url)})`;
  const hosts = sentinel.hosts.map(({ host, port }) => `${host}:${port}`).join(",");
  return `REDIS_SENTINELS (${hosts}, master "${sentinel.name}")`;
}

/**
 * Redis refusing writes because it is full: `maxmemory` reached under the `noeviction` policy
 * (the one BullMQ requires), each write answered "OOM command not allowed…". Nothing is wrong with
 * us and retrying is right; it ends when an operator makes room. `probeKey` is a key of the
 * process's own prefix: one short-lived write tells when Redis takes writes again.
 */
export function redisFullRefusals(redis: Redis, probeKey: string): Refusals {
  return {
    is: (error) => error instanceof Error && error.message.startsWith("OOM "),
    says: () => "is full (maxmemory reached, writes refused)",
    probe: () => redis.set(probeKey, "1", "PX", 1_000),
  };
}
