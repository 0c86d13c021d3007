/**
 * Which API instances are alive, as the stream bound counts leases (slots.ts). Each process is
 * an incarnation (a random id) that, once it holds streams, says it is alive every HEARTBEAT_MS
 * in a Redis sorted set (`<prefix>:api:instances`, member = incarnation, score = alive until). A
 * lease counts only while its incarnation is in the set, so the streams of a process killed -9
 * stop counting within ALIVE_MS, not at the end of their leases.
 *
 * An instance also has a name, its host and port, and with API_PROCESSES its process slot
 * (`<prefix>:api:instance-names`, name → incarnation): a process restarted on the same host, port
 * and slot replaces its dead incarnation as it registers, so its clients' reconnects are served at
 * once. Processes sharing a port need the slot: under one name each would replace the other.
 *
 * Times are Redis' own (TIME in the scripts), so hosts' clocks need not agree. Nothing here can
 * refuse a stream wrongly: an instance taken for dead (paused longer than ALIVE_MS, or cut from
 * Redis) only stops its streams counting until it beats again and renews them.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type Redis from "ioredis";

/** How often an instance holding streams says it is alive. */
export const HEARTBEAT_MS = 1_000;
/** An instance not heard from for this long is dead: two heartbeats may be missed. */
export const ALIVE_MS = 3 * HEARTBEAT_MS;

/** Lua: `now()`, Redis' clock in ms (writes after TIME need effects replication before Redis 7). */
export const NOW_LUA = `
if redis.replicate_commands then redis.replicate_commands() end
local function now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
`;

/**
 * Lua shared by the scripts: `register(now)` marks this incarnation alive and drops the
 * incarnation its name had before; `alive(incarnation)`. KEYS[1] is the set of live
 * incarnations, KEYS[2] the names; ARGV[1..3] the name, the incarnation and ALIVE_MS.
 */
export const REGISTER_LUA = `${NOW_LUA}
local function register(at)
  local previous = redis.call('HGET', KEYS[2], ARGV[1])
  if previous and previous ~= ARGV[2] then redis.call('ZREM', KEYS[1], previous) end
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('ZADD', KEYS[1], at + tonumber(ARGV[3]), ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', at)
end
local function alive(incarnation)
  return redis.call('ZSCORE', KEYS[1], incarnation) ~= false
end
`;

/** A heartbeat also forgets the names whose incarnation is gone (hosts that never came back). */
const HEARTBEAT = `${REGISTER_LUA}
register(now())
local names = redis.call('HGETALL', KEYS[2])
for i = 1, #names, 2 do
  if not alive(names[i + 1]) then redis.call('HDEL', KEYS[2], names[i]) end
end
return 1`;

/** A graceful stop: this incarnation's streams have been released; it is no longer alive. */
const RETIRE = `
redis.call('ZREM', KEYS[1], ARGV[2])
if redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[2], ARGV[1]) end
return 1`;

/**
 * The name of an instance listening on `port`, as process `slot` of those sharing it (0 or none:
 * the first, or the only one, named as before API_PROCESSES); unique per process when it does not
 * listen.
 */
export function instanceName(
  port: number | undefined,
  incarnation: string,
  slot: number | undefined,
): string {
  if (port === undefined) return incarnation;
  return slot ? `${hostname()}:${port}#${slot}` : `${hostname()}:${port}`;
}

export function createInstances({
  redis,
  keyPrefix,
  slot,
}: {
  redis: Redis;
  keyPrefix: string;
  /** Which of the processes sharing this port this is (config.api.processSlot). */
  slot?: number;
}) {
  const incarnation = randomUUID();
  const keys = [`${keyPrefix}:api:instances`, `${keyPrefix}:api:instance-names`];
  let name: string | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  /** KEYS[1..2] and ARGV[1..3] of a script that begins with REGISTER_LUA. */
  const scriptArguments = (): [string, string, string, string, number] => [
    keys[0]!,
    keys[1]!,
    name ?? incarnation,
    incarnation,
    ALIVE_MS,
  ];

  return {
    incarnation,
    scriptArguments,
    /** Starts the heartbeat, once this instance holds streams and knows its port. */
    beat(port: number | undefined) {
      name ??= instanceName(port, incarnation, slot);
      if (heartbeat) return;
      heartbeat = setInterval(() => {
        redis.eval(HEARTBEAT, 2, ...scriptArguments()).catch(() => {
          // Redis away: this instance's streams stop counting elsewhere until it is back.
        });
      }, HEARTBEAT_MS);
      heartbeat.unref();
    },
    /** Stops the heartbeat and says so at once (the process is stopping). */
    async retire() {
      clearInterval(heartbeat);
      heartbeat = undefined;
      if (name === undefined) return;
      await redis.eval(RETIRE, 2, ...scriptArguments()).catch(() => {});
    },
  };
}

export type Instances = ReturnType<typeof createInstances>;
