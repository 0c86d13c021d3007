/**
 * The API process, started by `bun api/main.ts [--migrate]` and by the CLI's `api` command. Reads
 * config, optionally creates and migrates the database, listens, and on SIGTERM/SIGINT stops
 * taking requests, closes the pools and exits 0. A database that is wrong (missing, unknown role)
 * or a port that is taken stops it with one line; Postgres or the node being away does not: it
 * serves 503 and /readyz says why until they answer. With API_PROCESSES above 1 this first
 * process also starts and supervises the others on the same port (processes.ts).
 */
import { createPublicClient, http } from "viem";
import { ensureDatabase, runMigrations } from "../db/migrate.ts";
import { config } from "../lib/config.ts";
import { checkPostgres, checkRpc } from "../lib/connection-checks.ts";
import { failAndExit, Unreachable } from "../lib/fail.ts";
import { claimPort, EXCLUSIVE_PORT, explainListenError } from "../lib/listen.ts";
import { logger } from "../lib/log.ts";
import { listenForMetrics, type MetricsEndpoint } from "../lib/metrics-server.ts";
import { closeOnSignal } from "../lib/shutdown.ts";
import { createApp } from "./app.ts";
import { openConnections } from "./connections.ts";
import { startApiProcesses, stopWithFirstProcess } from "./processes.ts";

export async function runApi({ migrate }: { migrate: boolean }): Promise<void> {
  const { databaseReadUrl, processes, processSlot: startedAs } = config.api;
  // The first of several processes is slot 0; the only one has none (nothing changes for it).
  const processSlot = processes > 1 ? (startedAs ?? 0) : undefined;
  const log = processSlot === undefined ? logger("api") : logger("api").child({ processSlot });
  if (startedAs !== undefined) stopWithFirstProcess();
  const [database, replica, node] = await Promise.allSettled([
    checkPostgres(config.databaseUrl, { databaseMayBeMissing: migrate, primary: true }),
    databaseReadUrl === undefined
      ? undefined
      : checkPostgres(databaseReadUrl, { setting: "DATABASE_READ_URL" }),
    config.chain.rpcUrl ? checkRpc(config.chain.rpcUrl) : undefined,
  ]);
  for (const check of [database, replica, node]) {
    if (check.status === "fulfilled") continue;
    // Away is an outage to wait out (unless migrations need the database now); wrong is not.
    if (check.reason instanceof Unreachable && !(migrate && check === database)) {
      log.warn({ cause: check.reason.message }, "starting anyway; /readyz is 503 until it answers");
    } else {
      failAndExit(check.reason);
    }
  }

  if (migrate) {
    try {
      await ensureDatabase(config.databaseUrl);
      await runMigrations(config.databaseUrl);
    } catch (error) {
      failAndExit(error);
    }
    log.info("migrations applied");
  }

  const connections = openConnections({
    databaseUrl: config.databaseUrl,
    databaseReadUrl,
    redis: config.redis,
    poolSize: config.api.poolSize,
  });

  // The head for /readyz comes from RPC_URL when one is configured; one quick try, no retries.
  const rpc = config.chain.rpcUrl
    ? createPublicClient({
        transport: http(config.chain.rpcUrl, { timeout: 2_000, retryCount: 0 }),
      })
    : undefined;
  const chainHead = rpc ? () => rpc.getBlockNumber({ cacheTime: 1_000 }) : undefined;

  const app = createApp({
    db: connections.db,
    primary: connections.primary,
    reads: connections.reads,
    redis: connections.redis,
    chainHead,
    watchIndexedBlock: connections.watchIndexedBlock,
    watchRevokedTokens: connections.watchRevokedTokens,
    log,
    settings: {
      rateLimitPerMinute: config.api.rateLimitPerMinute,
      readyMaxLagBlocks: config.api.readyMaxLagBlocks,
      keyPrefix: config.queuePrefix,
      imageTemplateS1: config.api.imageTemplateS1,
      imageTemplateS2: config.api.imageTemplateS2,
      corsOrigins: config.api.corsOrigins,
      responseCacheEntries: config.api.responseCacheEntries,
      processSlot,
      stream: {
        maxPerToken: config.api.streamsPerToken,
        idleMs:
          config.api.streamIdleSeconds === undefined
            ? undefined
            : config.api.streamIdleSeconds * 1000,
      },
    },
  });
  const where = { hostname: config.api.host, port: config.api.port, setting: "PORT" };
  try {
    if (processSlot === undefined) {
      app.listen({ hostname: where.hostname, port: where.port, ...EXCLUSIVE_PORT });
    } else {
      // The first process checks that nothing else holds the port; the others join it.
      const port = startedAs === undefined ? claimPort(where) : where.port;
      app.listen({ hostname: where.hostname, port, reusePort: true });
    }
  } catch (error) {
    await connections.close();
    failAndExit(explainListenError(error, where));
  }

  // Each of several processes answers a scrape on the shared port with its own figures only, so
  // each also serves them on a port of its own, METRICS_PORT + its slot, when that is set.
  let metrics: MetricsEndpoint | undefined;
  if (processSlot !== undefined && config.metrics.port !== undefined) {
    try {
      metrics = listenForMetrics(config.metrics.host, config.metrics.port + processSlot);
    } catch (error) {
      await app.stop();
      await connections.close();
      failAndExit(error);
    }
    // A host name of at least 4 letters: Elysia looks for the path from the URL's 12th character.
    metrics.serve(async () => (await app.handle(new Request("http://localhost/metrics"))).text());
  }

  const others =
    processSlot === 0
      ? startApiProcesses({ count: processes, port: app.server!.port!, log })
      : undefined;
  closeOnSignal(
    async () => {
      const othersStopped = others?.stop();
      metrics?.stop();
      // Streams never finish by themselves; a graceful stop would wait for them.
      app.decorator.closeStreams();
      await app.stop();
      await Promise.all([connections.close(), othersStopped]);
    },
    { log },
  );
  log.info({ host: config.api.host, port: app.server?.port, pid: process.pid }, "listening");
}
