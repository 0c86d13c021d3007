/**
 * The only module that reads process.env. Every variable is parsed and checked here once,
 * and a bad value stops the process with a message that names the variable.
 */
import { firstHostUrl } from "./database-url.ts";
import { ConfigError, databaseUrl, envReaders, url } from "./env-readers.ts";
import { registerSecrets, registerSecretUrls } from "./error-cause.ts";
import type { RedisSentinel, RedisTarget } from "./redis.ts";

export { ConfigError };

const env = process.env;
const {
  text,
  optionalText,
  integer,
  optionalInteger,
  list,
  origins,
  optionalBlock,
  optionalAddress,
  oneOf,
} = envReaders(env);

// Before any check: a malformed URL still carries its secrets.
registerSecretUrls([
  env.RPC_URL,
  env.RPC_WS_URL,
  env.RPC_CHECK_URL,
  env.DATABASE_URL,
  firstHostUrl(env.DATABASE_URL),
  env.DATABASE_READ_URL,
  env.REDIS_URL,
  env.DEMO_DATABASE_URL,
]);
registerSecrets([env.REDIS_SENTINEL_PASSWORD]);

function optionalDatabaseReadUrl(): string | undefined {
  const raw = optionalText("DATABASE_READ_URL");
  return raw === undefined ? undefined : databaseUrl("DATABASE_READ_URL", raw, false);
}

function optionalRpcUrl(): string | undefined {
  const raw = optionalText("RPC_URL");
  return raw === undefined ? undefined : url("RPC_URL", raw, ["http", "https"], "an http(s) URL");
}

function optionalCheckUrl(): string | undefined {
  const raw = optionalText("RPC_CHECK_URL");
  return raw === undefined
    ? undefined
    : url("RPC_CHECK_URL", raw, ["http", "https"], "an http(s) URL");
}

function optionalWsUrl(): string | undefined {
  const raw = optionalText("RPC_WS_URL");
  return raw === undefined ? undefined : url("RPC_WS_URL", raw, ["ws", "wss"], "a ws(s) URL");
}

/**
 * Redis at REDIS_URL, or, with REDIS_SENTINELS, the primary its sentinels name (REDIS_URL then
 * gives only the password, user and database).
 */
function redis(): RedisTarget {
  const url = redisUrl();
  const sentinel = redisSentinel();
  if (sentinel && url.startsWith("rediss:")) {
    throw new ConfigError(
      "REDIS_URL is rediss:// but TLS through Sentinel (REDIS_SENTINELS) is not supported; use redis://",
    );
  }
  return sentinel ? { url, sentinel } : { url };
}

function redisUrl(): string {
  return url(
    "REDIS_URL",
    text("REDIS_URL", "redis://127.0.0.1:6379"),
    ["redis", "rediss"],
    "redis://host:port or rediss://",
  );
}

function redisSentinel(): RedisSentinel | undefined {
  const hosts = list("REDIS_SENTINELS").map(sentinelAddress);
  const name = optionalText("REDIS_SENTINEL_NAME");
  const password = optionalText("REDIS_SENTINEL_PASSWORD");
  if (hosts.length === 0) {
    const set = { REDIS_SENTINEL_NAME: name, REDIS_SENTINEL_PASSWORD: password };
    for (const [variable, value] of Object.entries(set)) {
      if (value !== undefined)
        throw new ConfigError(`${variable} is set but REDIS_SENTINELS is not`);
    }
    return undefined;
  }
  if (name !== undefined && !/^[^\s]+$/.test(name)) {
    throw new ConfigError(
      `REDIS_SENTINEL_NAME must be one word (the sentinels' master group name)`,
    );
  }
  // Debian's sentinel.conf and Redis's own examples name the group "mymaster".
  return { hosts, name: name ?? "mymaster", ...(password !== undefined && { password }) };
}

/** host:port (IPv6 in brackets); the port defaults to Sentinel's 26379. */
function sentinelAddress(entry: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]/@]+))(?::(\d{1,5}))?$/.exec(entry);
  const port = Number(match?.[3] ?? 26379);
  if (!match || port < 1 || port > 65_535) {
    throw new ConfigError(
      `REDIS_SENTINELS must list sentinels as host:port, comma-separated; got "${entry}"`,
    );
  }
  return { host: (match[1] ?? match[2])!, port };
}

export const MAINNET_STAKER = "0x67e1ecfa9232e27eaf3133b968a33a9a0dca9e16" as const;

export type Preset = "devnet" | "mainnet";

function load() {
  const preset = oneOf<Preset>("PRESET", ["devnet", "mainnet"], "devnet");
  return {
    logLevel: oneOf("LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "silent"], "info"),
    databaseUrl: databaseUrl(
      "DATABASE_URL",
      text("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/citizen_staking"),
      true,
    ),
    redis: redis(),
    /** Prefix of every BullMQ key, so several deployments can share one Redis. */
    queuePrefix: text("QUEUE_PREFIX", "citizen-staking"),
    chain: {
      preset,
      /** Unset on the devnet preset means: use the devnet the demo started (see devnetFile). */
      // HTTP only: the indexer batches JSON-RPC requests over HTTP (viem's http transport), and
      // the API asks the same URL for the head.
      rpcUrl: optionalRpcUrl(),
      /**
       * The node's WebSocket endpoint: the follower subscribes to new heads there and indexes a
       * block the moment it arrives. Without it the follower polls (FOLLOW_INTERVAL_MS).
       */
      wsUrl: optionalWsUrl(),
      chainId: integer("CHAIN_ID", 0) || undefined,
      stakerAddress:
        optionalAddress("STAKER_ADDRESS") ?? (preset === "mainnet" ? MAINNET_STAKER : undefined),
      startBlock: optionalBlock("START_BLOCK"),
      devnetFile: text("DEVNET_FILE", ".devnet/devnet.json"),
    },
    indexer: {
      chunkSize: integer("CHUNK_SIZE", 2_000, 1),
      concurrency: integer("CONCURRENCY", 4, 1),
      /**
       * Staker events one process's chunk jobs work on at once: a worker's memory follows them,
       * and a dense stretch of the chain puts thousands in one chunk.
       */
      eventsInFlight: integer("EVENTS_IN_FLIGHT", 2_000, 1),
      confirmations: integer("CONFIRMATIONS", 0),
      /**
       * Blocks below the head taken as final. Unset: the node's `finalized` block (head - 64
       * on a node without one). Chunk jobs index up to it; the follower goes block by block
       * above it, and a reorg replacing a block at or below it stops the indexer.
       */
      finalityDepth: optionalInteger("FINALITY_DEPTH", 0, 200),
      followIntervalMs: integer("FOLLOW_INTERVAL_MS", 200, 10),
      /**
       * Time to live of the leading follow process's lease in Redis, renewed four times within
       * it: when the leader dies, a standby follow process leads about this long after.
       */
      followLeaseMs: integer("FOLLOW_LEASE_MS", 2_000, 200),
      /** Largest log query sent to the node; shrinks and grows with the provider's answers. */
      maxLogRange: integer("MAX_LOG_RANGE", 10_000, 1),
      /**
       * A second node, of another operator or provider, that answers the same spans of every
       * chunk: a block whose staker logs the two give differently is settled (asked again, then
       * by its receipts) or its chunk is parked. Unset: chunks are checked against the staker's
       * token transfers on RPC_URL alone. RPC_MAX_REQUESTS_PER_SECOND caps it too, apart.
       */
      checkRpcUrl: optionalCheckUrl(),
      /**
       * JSON-RPC calls per second this process sends over HTTP (a batch counts each call), so a
       * provider key's budget is not hammered into 429s. Per process: processes sharing a key
       * split its budget. Unset: no cap (a local or self-run node).
       */
      rpcMaxRequestsPerSecond: optionalInteger("RPC_MAX_REQUESTS_PER_SECOND", 1, 1_000_000),
      /**
       * How long a worker's hold on a job lasts without renewal: a worker killed mid-job gives
       * its chunk back to the queue about this long after it died.
       */
      jobLockMs: integer("JOB_LOCK_MS", 30_000, 1_000),
      /**
       * How often the follower reads one page of citizens' tokenURIs again at the head (one
       * batched eth_call of 50, recorded failures first), cycling through all; 0 turns it off.
       */
      metadataRefreshIntervalMs: integer("METADATA_REFRESH_INTERVAL_MS", 5_000, 0),
    },
    /**
     * How long a stopping process waits for its current jobs or requests before it exits
     * anyway (see lib/shutdown.ts).
     */
    shutdownGraceMs: integer("SHUTDOWN_GRACE_MS", 20_000, 0),
    metrics: {
      /**
       * Off unless set: several indexer processes often share a host, and a port in use stops
       * a process, so each one gets its own port from its operator.
       */
      port: optionalInteger("METRICS_PORT", 0, 65_535),
      host: text("METRICS_HOST", "127.0.0.1"),
    },
    api: {
      /**
       * A hot standby of DATABASE_URL the API reads from (answers, token checks, the stream,
       * /readyz's indexed block); unset, it reads DATABASE_URL. Token use is still written and
       * revocations still heard (LISTEN) on DATABASE_URL: a standby refuses both.
       */
      databaseReadUrl: optionalDatabaseReadUrl(),
      host: text("HOST", "127.0.0.1"),
      port: integer("PORT", 3000),
      /**
       * API processes sharing PORT on this host (SO_REUSEPORT, Linux): the first starts the
       * others and restarts any that dies (api/processes.ts). One process uses one core at most
       * (docs/performance.md).
       */
      processes: optionalInteger("API_PROCESSES", 1, 256) ?? 1,
      /**
       * Set by the first API process on the others it starts (1..API_PROCESSES-1), never by an
       * operator: which of them this is, so each keeps its own name for the stream leases.
       */
      processSlot: optionalInteger("API_PROCESS_SLOT", 1, 255),
      /**
       * Connections of the API's read pool (and at most as many for the rest). One connection
       * pipelines every query: on a quiet 2-core host one made 23.6k req/s against 14.9k with
       * four (bench/api.ts runs both); four won only while other work crowded the cores. Raise it
       * with the database host's cores.
       */
      poolSize: integer("DB_POOL_SIZE", 1, 1),
      /** Responses each API instance keeps for the current data version; 0 turns it off. */
      responseCacheEntries: integer("RESPONSE_CACHE_ENTRIES", 10_000),
      /** Origins a browser dashboard may call the API from; CORS is off when empty. */
      corsOrigins: origins("CORS_ORIGINS"),
      rateLimitPerMinute: integer("RATE_LIMIT_PER_MINUTE", 6_000, 1),
      /** The live stream's bounds; unset, the stream module's defaults hold. */
      streamsPerToken: optionalInteger("STREAMS_PER_TOKEN", 1, 10_000),
      streamIdleSeconds: optionalInteger("STREAM_IDLE_SECONDS", 1, 86_400),
      readyMaxLagBlocks: integer("READY_MAX_LAG_BLOCKS", 5),
      imageTemplateS1: optionalText("IMAGE_URL_TEMPLATE_S1"),
      imageTemplateS2: optionalText("IMAGE_URL_TEMPLATE_S2"),
      boardUser: optionalText("BOARD_USER"),
      boardPassword: optionalText("BOARD_PASSWORD"),
    },
  };
}

function loadOrExit() {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

export const config = loadOrExit();
export type Config = typeof config;
