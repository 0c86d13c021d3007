/**
 * Fail-fast checks for one-shot commands: each tries its service once with a short timeout and,
 * when it cannot be used, throws one line naming the variable and the real cause. The clients
 * the commands then open retry and wait (BullMQ's connection waits for Redis forever), which is
 * right for a long-running process and wrong for `status`.
 */
import postgres from "postgres";
import { createPublicClient, http } from "viem";
import { causeCode, describeCause, safeUrl } from "./error-cause.ts";
import { Refused, Unreachable } from "./fail.ts";
import { describeRedis, openRedisOnce, type RedisTarget } from "./redis.ts";
import { httpStatusOf, isTransientRpcFailure } from "./rpc-failures.ts";

/** The variable points at a service that answers but cannot be used as configured. */
export class Misconfigured extends Refused {
  override name = "Misconfigured";
}

/**
 * The node answered a start-up read with an error that waiting does not fix (a refused key, a
 * method it does not serve) yet that proves nothing about the settings: exit 1, not waited for.
 */
export class RpcFailed extends Error {
  override name = "RpcFailed";
}

/**
 * A failed read of the node as a start-up check reports it: a failure that passes by itself
 * (isTransientRpcFailure) is Unreachable, which long-running commands wait out; any other is
 * RpcFailed. `where` names the setting and the read.
 */
export function nodeFailure(where: string, error: unknown): Unreachable | RpcFailed {
  const status = httpStatusOf(error);
  const cause = `${status === undefined ? "" : `HTTP ${status}: `}${describeCause(error)}`;
  return isTransientRpcFailure(error)
    ? new Unreachable(`${where}: the node does not answer, for now: ${cause}`)
    : new RpcFailed(`${where}: ${cause}`);
}

/** Codes of a server that is not there (as opposed to one that answers "no"). */
const NOT_THERE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  // Postgres ending our sessions: terminated (pg_terminate_backend, a fast shutdown), ended
  // because another backend crashed, or refused while the server recovers from that crash.
  "57P01",
  "57P02",
  "57P03",
]);

export function isConnectionFailure(error: unknown): boolean {
  const code = causeCode(error);
  if (code !== undefined) return NOT_THERE.has(code);
  // ioredis rejects commands on a dropped socket with a plain Error and no code, and says so
  // when no sentinel gave it a primary to connect to (in a failover on a loaded host, all of
  // them answering too slowly) before it asks them again.
  return (
    error instanceof Error &&
    /Connection is closed|connect ETIMEDOUT|All sentinels are unreachable/i.test(error.message)
  );
}

/** SQLSTATE invalid_catalog_name: the database in the URL does not exist. */
const MISSING_DATABASE = "3D000";

/**
 * `setting` names the variable the URL came from. With `primary`, a hot standby is refused: the
 * API writes token use and LISTENs there, which a standby refuses (and LISTEN fails silently).
 */
export async function checkPostgres(
  url: string,
  {
    databaseMayBeMissing = false,
    timeoutSeconds = CHECK_TIMEOUT_MS.postgres / 1_000,
    setting = "DATABASE_URL",
    primary = false,
  } = {},
): Promise<void> {
  const sql = postgres(url, { max: 1, connect_timeout: timeoutSeconds, onnotice: () => {} });
  const where = `${setting} (${safeUrl(url)})`;
  // postgres.js never settles a query when the server accepts and at once drops each
  // connection (a proxy or pooler whose database is away): without a bound, a process
  // starting then would wait forever instead of waiting for the service.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const silence = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Unreachable(`${where}: cannot connect: no answer within ${timeoutSeconds} s`)),
      timeoutSeconds * 1_000,
    );
  });
  let standby = false;
  try {
    const [row] = await Promise.race([sql`select pg_is_in_recovery() as standby`, silence]);
    standby = row?.standby === true;
  } catch (error) {
    if (error instanceof Unreachable) throw error;
    const code = causeCode(error);
    if (databaseMayBeMissing && code === MISSING_DATABASE) return;
    if (isConnectionFailure(error)) {
      throw new Unreachable(`${where}: cannot connect: ${describeCause(error)}`);
    }
    const hint = code === MISSING_DATABASE ? "; `migrate` creates it" : "";
    throw new Misconfigured(`${where}: ${describeCause(error)}${hint}`);
  } finally {
    clearTimeout(timer);
    await sql.end({ timeout: 1 });
  }
  if (primary && standby) {
    throw new Misconfigured(
      `${where} is a hot standby (in recovery): the API writes token use and LISTENs for revocations there; point ${setting} at the primary, and DATABASE_READ_URL at the standby`,
    );
  }
}

/** How long each check waits for its service (tests derive their time bounds from these). */
export const CHECK_TIMEOUT_MS = { postgres: 5_000, redis: 3_000, rpc: 5_000 } as const;

/**
 * One bounded try at Redis, through the sentinels when they are configured. A wrong password or
 * master name is Misconfigured (naming its variable); anything else is Unreachable, waited out by
 * long-running processes (a primary down until the sentinels promote a replica is one).
 */
export async function checkRedis(
  target: RedisTarget,
  { timeoutMs = CHECK_TIMEOUT_MS.redis } = {},
): Promise<void> {
  const redis = openRedisOnce(target, timeoutMs);
  // The failures are reported once, below; without a listener ioredis prints every one. The
  // event carries the cause (ECONNREFUSED); connect() then rejects with "Connection is closed".
  let firstError: unknown;
  const sentinelErrors: string[] = [];
  redis.on("error", (error) => {
    firstError ??= error;
  });
  redis.on("sentinelError", (error: Error) => sentinelErrors.push(describeCause(error)));
  try {
    await redis.connect();
    await redis.ping();
  } catch (rejection) {
    const error = firstError ?? rejection;
    const where = describeRedis(target);
    // Redis answers a wrong password with an error reply, not a failed connection. The
    // sentinels are asked first: a refusal there is theirs.
    const sentinelRefusal = sentinelErrors.find((cause) => WRONG_PASSWORD.test(cause));
    if (sentinelRefusal) {
      throw new Misconfigured(`${where}: ${sentinelRefusal} (REDIS_SENTINEL_PASSWORD)`);
    }
    if (error instanceof Error && WRONG_PASSWORD.test(error.message)) {
      const variable = target.sentinel ? " (the user or password in REDIS_URL)" : "";
      throw new Misconfigured(`${where}: ${describeCause(error)}${variable}`);
    }
    // A sentinel that monitors no master of that name: an error reply (Redis 7), or a null one.
    if (sentinelErrors.some((cause) => /No such master|invalid reply: null/.test(cause))) {
      throw new Misconfigured(
        `${where}: the sentinels monitor no master of that name (REDIS_SENTINEL_NAME)`,
      );
    }
    throw new Unreachable(`${where}: cannot connect: ${describeCause(error)}`);
  } finally {
    redis.disconnect();
  }
}

/** Redis's and Sentinel's words for credentials they refuse, or a password they do not expect. */
const WRONG_PASSWORD = /NOAUTH|WRONGPASS|invalid password|without any password configured/;

/**
 * Asks the node for its chain id once, without retries. `source` names where the URL came from
 * (RPC_URL, or the devnet file). Only the host is printed: providers put keys in the path.
 */
export async function checkRpc(
  url: string,
  { source = "RPC_URL", timeoutMs = CHECK_TIMEOUT_MS.rpc } = {},
): Promise<number> {
  const client = createPublicClient({
    transport: http(url, { retryCount: 0, timeout: timeoutMs }),
  });
  try {
    return await client.getChainId();
  } catch (error) {
    throw nodeFailure(`${source} (${safeUrl(url)}) eth_chainId`, error);
  }
}
