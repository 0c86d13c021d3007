#!/usr/bin/env bun
/**
 * The operator's command line: migrate, backfill, follow, reindex, status, verify, board, tokens,
 * and the API (`api`), so one compiled binary runs the whole system.
 */
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { runApi } from "../api/server.ts";
import { createDatabase, type Database } from "../db/client.ts";
import { ensureDatabase, runMigrations } from "../db/migrate.ts";
import { createToken, listTokens, revokeToken } from "../db/tokens.ts";
import {
  BackfillLeavesGap,
  ChainMismatch,
  createIndexer,
  type Indexer,
  RangeAboveFinality,
} from "../indexer/indexer.ts";
import { createQueues, enqueueRange, redisConnection } from "../indexer/jobs/queues.ts";
import { createIndexerStore } from "../indexer/store/index.ts";
import { checkRange } from "../lib/block-range.ts";
import { ConfigError, config } from "../lib/config.ts";
import { checkPostgres, checkRedis } from "../lib/connection-checks.ts";
import { failAndExit, failureLine, Refused, Unreachable } from "../lib/fail.ts";
import { logger } from "../lib/log.ts";
import { listenForMetrics } from "../lib/metrics-server.ts";
import { createOutageReporter } from "../lib/outages.ts";
import { isTransientRpcFailure } from "../lib/rpc-failures.ts";
import { closeOnSignal } from "../lib/shutdown.ts";
import { startBoard } from "../ops/board.ts";
import {
  type ChainSettings,
  checkChainSettings,
  resolveChainSettings,
} from "../ops/chain-settings.ts";
import { backfillProgress, reindexProgress, showProgress } from "../ops/progress.ts";
import { gatherStatus, renderStatus } from "../ops/status.ts";
import { citizenStakers, verifyAgainstChain } from "../ops/verify.ts";

const log = logger("cli");

function blockNumber(value: string): bigint {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a block number");
  return BigInt(value);
}

async function migrate() {
  await ensureDatabase(config.databaseUrl);
  await runMigrations(config.databaseUrl);
}

/**
 * Checks, at once and in one line each, the services a command needs, before it opens the
 * clients that would wait for them. `database: "may-create"` for commands that migrate first.
 */
async function checkServices(needs: {
  database?: "existing" | "may-create";
  redis?: boolean;
  chain?: ChainSettings;
}): Promise<void> {
  await Promise.all([
    needs.database &&
      checkPostgres(config.databaseUrl, { databaseMayBeMissing: needs.database === "may-create" }),
    needs.redis && checkRedis(config.redisUrl),
    needs.chain && checkChainSettings(needs.chain),
  ]);
}

/** One line: the RPC calls this process made, by method, and per event indexed. */
function rpcSummary(calls: Record<string, number>, events: number): string {
  const entries = Object.entries(calls).sort(([, a], [, b]) => b - a);
  const total = entries.reduce((sum, [, count]) => sum + count, 0);
  const perEvent = events > 0 ? (total / events).toFixed(3) : "-";
  const byMethod = entries.map(([method, count]) => `${method} ${count}`).join(", ");
  return `RPC calls by this process: ${total} (${perEvent} per event)${byMethod ? `: ${byMethod}` : ""}`;
}

/**
 * For long-running processes: a service that cannot be reached yet (a restart, an outage, a
 * node resetting connections or answering 503) is waited for, with one warning, as it would be
 * once running; a refusal (wrong database, role, staker, chain) still stops the process at once.
 * Each step of a start-up goes through the same waiter, so one outage is one warning.
 */
function createStartupWaiter() {
  let waitingSince: number | undefined;
  return async function untilReachable<T>(step: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        const result = await step();
        if (waitingSince !== undefined) {
          log.info({ waitedMs: Date.now() - waitingSince }, "every service answers again");
          waitingSince = undefined;
        }
        return result;
      } catch (error) {
        if (!(error instanceof Unreachable) && !isTransientRpcFailure(error)) throw error;
        if (waitingSince === undefined) {
          log.warn({ err: failureLine(error) }, "waiting for a service to answer");
          waitingSince = Date.now();
        }
        await Bun.sleep(1_000);
      }
    }
  };
}

/**
 * The indexer of a command. With `metrics` and METRICS_PORT set, it also serves /metrics until
 * it is closed; the port is bound first, so a taken one stops the command before it connects.
 */
async function openIndexer(
  chain: ChainSettings,
  { readOnly = false, metrics = false }: { readOnly?: boolean; metrics?: boolean } = {},
): Promise<Indexer> {
  const endpoint =
    metrics && config.metrics.port !== undefined
      ? listenForMetrics(config.metrics.host, config.metrics.port)
      : undefined;
  const indexer = await createIndexer({
    rpcUrl: chain.rpcUrl,
    wsUrl: chain.wsUrl,
    staker: chain.staker,
    chainId: chain.chainId,
    databaseUrl: config.databaseUrl,
    redisUrl: config.redisUrl,
    queuePrefix: config.queuePrefix,
    ...config.indexer,
    readOnly,
  }).catch((error: unknown) => {
    endpoint?.stop();
    throw error;
  });
  if (!endpoint) return indexer;
  endpoint.serve(() => indexer.metrics.scrape());
  log.info({ host: config.metrics.host, port: endpoint.port }, "serving metrics at /metrics");
  return {
    ...indexer,
    async close() {
      endpoint.stop();
      await indexer.close();
    },
  };
}

const program = new Command()
  .name("citizen-staking")
  .description("Operate the citizen-staking indexer and API")
  .showHelpAfterError("(add --help for usage)")
  // Usage errors end in the catch below, so that bad input exits 2 like every other refusal.
  .exitOverride();

program
  .command("migrate")
  .description("create the database if needed and apply every migration")
  .action(async () => {
    await checkServices({ database: "may-create" });
    await migrate();
    log.info("migrations applied");
  });

program
  .command("follow")
  .description(
    "index from the checkpoint (or the start block) and follow the head; runs chunk workers too",
  )
  .option("--no-migrate", "do not apply migrations on start")
  .action(async (options: { migrate: boolean }) => {
    const chain = await resolveChainSettings(config);
    const untilReachable = createStartupWaiter();
    await untilReachable(() =>
      checkServices({ database: options.migrate ? "may-create" : "existing", chain }),
    );
    if (options.migrate) await migrate();
    const indexer = await untilReachable(() => openIndexer(chain, { metrics: true }));
    const checkpoint = await untilReachable(async () =>
      indexer.ensureCheckpoint(await chain.startBlock()),
    );
    log.info(
      { indexedBlock: checkpoint.indexedBlock.toString(), staker: indexer.contracts.staker },
      "following",
    );
    await indexer.start({ follow: true });
    closeOnSignal(indexer.close, { log });
  });

program
  .command("worker")
  .description("run chunk workers only (add processes on more hosts to backfill faster)")
  .action(async () => {
    const chain = await resolveChainSettings(config);
    const untilReachable = createStartupWaiter();
    await untilReachable(() => checkServices({ database: "existing", chain }));
    const indexer = await untilReachable(() => openIndexer(chain, { metrics: true }));
    await indexer.start({ follow: false });
    closeOnSignal(indexer.close, { log });
    log.info(
      {
        queuePrefix: config.queuePrefix,
        concurrency: config.indexer.concurrency,
        staker: indexer.contracts.staker,
      },
      "worker taking chunk jobs",
    );
  });

program
  .command("backfill")
  .description("index a block range through chunk jobs, with progress")
  .option(
    "--from <block>",
    "first block (default: the checkpoint, or the start block)",
    blockNumber,
  )
  .option("--to <block>", "last block (default: the finality boundary)", blockNumber)
  .option("--enqueue-only", "queue the chunks for other workers and exit")
  .action(async (options: { from?: bigint; to?: bigint; enqueueOnly?: boolean }) => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "may-create", redis: true, chain });
    await migrate();
    const indexer = await openIndexer(chain, { metrics: true });
    const startBlock = await chain.startBlock();
    const [checkpoint, { head, finalized }] = await Promise.all([
      indexer.store.checkpoint(),
      indexer.chainTip(),
    ]);
    // Blocks above the finality boundary are the follower's, indexed block by block.
    const range = {
      from: options.from ?? (checkpoint ? checkpoint.indexedBlock + 1n : startBlock),
      to: options.to ?? finalized,
    };
    if (options.from === undefined && options.to === undefined && range.from > range.to) {
      console.log(
        `nothing to backfill: indexed up to ${range.from - 1n}, finality boundary ${finalized}, head ${head}`,
      );
      return indexer.close();
    }
    try {
      checkRange(range, { startBlock, head });
    } catch (error) {
      await indexer.close();
      throw error;
    }
    // Taken before the chunks are queued: workers elsewhere may start on them at once.
    const progress = await backfillProgress(indexer, range.from, range.to);
    const { from, to, chunks } = await indexer.enqueueBackfill({ ...range, startBlock });
    log.info({ from: from.toString(), to: to.toString(), chunks }, "backfill queued");
    if (options.enqueueOnly) return indexer.close();
    await indexer.start({ follow: false });
    closeOnSignal(indexer.close, { log });
    const result = await showProgress(indexer, progress);
    const before =
      progress.eventsBefore > 0 ? `; ${progress.eventsBefore} were indexed before` : "";
    console.log(
      `backfill done: ${result.events} events indexed in ${result.seconds.toFixed(1)} s (${result.rate} events/s), blocks ${from}..${to}${before}`,
    );
    console.log(rpcSummary(await indexer.metrics.rpcCalls(), result.events));
    await indexer.close();
  });

program
  .command("reindex")
  .description("fetch a block range again and rebuild what it touches, while the API keeps serving")
  .requiredOption("--from <block>", "first block", blockNumber)
  .requiredOption("--to <block>", "last block", blockNumber)
  .option("--enqueue-only", "queue the chunks for other workers and exit")
  .action(async (options: { from: bigint; to: bigint; enqueueOnly?: boolean }) => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "existing", redis: true, chain });
    const indexer = await openIndexer(chain, { metrics: true });
    const [checkpoint, head, startBlock] = await Promise.all([
      indexer.store.checkpoint(),
      indexer.client.getBlockNumber(),
      chain.startBlock(),
    ]);
    try {
      checkRange(options, { startBlock, head, indexedBlock: checkpoint?.indexedBlock ?? null });
    } catch (error) {
      await indexer.close();
      throw error;
    }
    const requestedAt = Date.now();
    const { chunkSize } = config.indexer;
    const chunks = await enqueueRange(
      indexer.queues.chunks,
      options.from,
      options.to,
      chunkSize,
      true,
      requestedAt,
    );
    log.info(
      { from: options.from.toString(), to: options.to.toString(), chunks },
      "reindex queued",
    );
    if (options.enqueueOnly) return indexer.close();
    await indexer.start({ follow: false });
    closeOnSignal(indexer.close, { log });
    const result = await showProgress(
      indexer,
      reindexProgress(indexer, { ...options, chunkSize, requestedAt }),
    );
    console.log(
      `reindex done: ${result.events} events indexed again in ${result.seconds.toFixed(1)} s (${result.rate} events/s), blocks ${options.from}..${options.to}`,
    );
    await indexer.close();
  });

program
  .command("status")
  .description(
    "head, finality boundary, indexed block, lag, queues, failures and recorded read failures",
  )
  .action(async () => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "existing", redis: true, chain });
    const indexer = await openIndexer(chain, { readOnly: true });
    const status = await gatherStatus(indexer);
    const settings = {
      queuePrefix: config.queuePrefix,
      finalityDepth: config.indexer.finalityDepth,
    };
    for (const line of renderStatus(status, settings)) console.log(line);
    await indexer.close();
  });

program
  .command("reproject")
  .description(
    "rebuild staked_citizens from the stored events and reads alone (no node needed), in one transaction, while the API keeps serving",
  )
  .action(async () => {
    await checkServices({ database: "existing" });
    const started = performance.now();
    const result = await withDatabase((db) => createIndexerStore(db).reproject());
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `reprojected ${result.citizens} staked citizens as of block ${result.indexedBlock} in ${seconds.toFixed(1)} s`,
    );
  });

program
  .command("rollback")
  .description(
    "forget everything indexed above a block, so it is indexed again from the chain (after ReorgTooDeep)",
  )
  .requiredOption("--to <block>", "the last block to keep", blockNumber)
  .action(async (options: { to: bigint }) => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "existing", redis: true, chain });
    const indexer = await openIndexer(chain);
    const checkpoint = await indexer.store.checkpoint();
    if (!checkpoint || options.to > checkpoint.indexedBlock) {
      throw new Refused(
        `--to ${options.to} is above the indexed block (${checkpoint?.indexedBlock ?? "none yet"}): nothing to roll back`,
      );
    }
    const { removedEvents } = await indexer.store.rollbackTo(options.to);
    console.log(
      `rolled back to block ${options.to}: ${removedEvents} events removed; \`follow\` indexes from ${options.to + 1n}`,
    );
    await indexer.close();
  });

program
  .command("read-failures")
  .description(
    "citizens whose metadata could not be read (served with the fallback name), and stakes whose Hand flag is inferred (the node had no trace API)",
  )
  .option(
    "--retry",
    "read their metadata again at the head, and the inferred Hand flags from the node's call traces, and keep what now reads",
  )
  .action(async (options: { retry?: boolean }) => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "existing", redis: true, chain });
    const indexer = await openIndexer(chain, { readOnly: !options.retry });
    if (options.retry) {
      const { fixed, still } = await indexer.retryReadFailures();
      console.log(`read again: ${fixed} fixed, ${still} still failing`);
      const hands = await indexer.settleInferredHandClaims();
      console.log(
        `Hand flags traced again: ${hands.settled} settled, ${hands.still} still inferred`,
      );
    }
    const rows = await indexer.store.readFailures();
    for (const row of rows) {
      console.log(
        `s${row.season} #${row.citizenId}\t${row.read}\tblock ${row.blockNumber}\t${row.reason}`,
      );
    }
    const inferred = await indexer.store.inferredHandClaims();
    for (const stake of inferred) {
      console.log(
        `s1 #${stake.citizenId}\thand flag\tblock ${stake.blockNumber}\tinferred (no call trace of ${stake.transactionHash}): vault.multiplier ${stake.vaultMultiplier} assumes no claim`,
      );
    }
    if (rows.length === 0 && inferred.length === 0) {
      console.error("no recorded read failures and no inferred Hand flags");
    }
    await indexer.close();
  });

program
  .command("refresh-metadata")
  .description(
    "read every citizen's metadata again at the head (50 to an eth_call) and keep what changed",
  )
  .action(async () => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "existing", redis: true, chain });
    const indexer = await openIndexer(chain);
    const { read, changed, unreadable, block } = await indexer.refreshMetadata((done) =>
      console.error(`metadata: ${done} citizens read`),
    );
    console.log(
      `metadata read at block ${block} for ${read} citizens: ${changed} changed, ${unreadable} unreadable at the head (kept as stored)`,
    );
    await indexer.close();
  });

program
  .command("verify")
  .description(
    "compare the tables with the chain at the indexed block (the staker's views and the citizens' transfers into its escrow); exit 1 on any mismatch",
  )
  .option(
    "--sample <n>",
    "read the positions of a random sample of wallets instead of all",
    (value) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1)
        throw new InvalidArgumentError("expected a positive whole number");
      return n;
    },
  )
  .action(async (options: { sample?: number }) => {
    const chain = await resolveChainSettings(config);
    await checkServices({ database: "existing", redis: true, chain });
    const indexer = await openIndexer(chain, { readOnly: true });
    const checkpoint = await indexer.store.checkpoint();
    if (!checkpoint) throw new ConfigError("nothing indexed yet");
    const wallets = options.sample
      ? (await citizenStakers(indexer.database.db))
          .sort(() => Math.random() - 0.5)
          .slice(0, options.sample)
      : undefined;
    // Chain and tables at one block: the tables as they stood after it (staked_citizens_at),
    // so what the follower indexes meanwhile is no false alarm.
    const mismatches = await verifyAgainstChain({
      client: indexer.client,
      db: indexer.database.db,
      contracts: indexer.contracts,
      at: checkpoint.indexedBlock,
      wallets,
      asOf: true,
      escrow: { from: await chain.startBlock(), maxLogRange: config.indexer.maxLogRange },
    });
    for (const m of mismatches) {
      console.log(
        `${m.wallet} s${m.season} #${m.citizenId} ${m.field}: tables ${m.tables}, chain ${m.chain}`,
      );
    }
    const checked = wallets ? `${wallets.length} wallets` : "every wallet";
    console.log(
      `verified ${checked} and the staker's escrow at block ${checkpoint.indexedBlock}: ${mismatches.length} mismatches`,
    );
    await indexer.close();
    process.exit(mismatches.length === 0 ? 0 : 1);
  });

program
  .command("board")
  .description(
    "serve bull-board for the job queues on 127.0.0.1, behind HTTP Basic auth (BOARD_USER, BOARD_PASSWORD)",
  )
  .option(
    "--port <port>",
    "port to listen on",
    (value) => {
      const n = Number(value);
      if (!/^\d+$/.test(value) || n > 65_535) throw new InvalidArgumentError("expected a port");
      return n;
    },
    3001,
  )
  .option(
    "--allow-retries",
    "let operators retry failed jobs (every other change, such as clean, remove, promote or pause, stays refused)",
  )
  .action(async (options: { port: number; allowRetries?: boolean }) => {
    // bull-board finds its page's 570 files in node_modules at run time, which the binary lacks.
    if (Bun.isStandaloneExecutable) {
      throw new Refused(
        "board is not in the compiled binary: run `bun scripts/cli.ts board` from a source checkout",
      );
    }
    const { boardUser: user, boardPassword: password } = config.api;
    if (!user || !password) {
      throw new ConfigError(
        "the board needs BOARD_USER and BOARD_PASSWORD set (its HTTP Basic credentials)",
      );
    }
    const connection = redisConnection(config.redisUrl);
    const queues = createQueues(connection, config.queuePrefix);
    const outages = createOutageReporter("REDIS_URL", log);
    outages.watch(queues.chunks, queues.follow);
    connection.on("ready", () => outages.recovered());
    const allowRetries = options.allowRetries === true;
    const board = await startBoard({
      queues,
      credentials: { user, password },
      port: options.port,
      allowRetries,
    });
    log.info(
      { url: board.url, queuePrefix: config.queuePrefix, allowRetries },
      allowRetries ? "board listening (retries allowed)" : "board listening (read-only)",
    );
    closeOnSignal(
      async () => {
        await board.stop();
        await queues.close();
        await connection.quit();
      },
      { log },
    );
  });

program
  .command("api")
  .description("serve the read API on HOST:PORT (what `bun api/main.ts` runs)")
  .option("--migrate", "create the database if needed and apply the migrations first")
  .action((options: { migrate?: boolean }) => runApi({ migrate: options.migrate === true }));

program
  .command("healthcheck")
  .description(
    "exit 0 when the API on this host answers /healthz (a container's HEALTHCHECK: no curl needed)",
  )
  .action(async () => {
    const url = `http://127.0.0.1:${config.api.port}/healthz`;
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) }).catch(
      (error: Error) => {
        throw new Unreachable(`${url}: ${error.message}`);
      },
    );
    if (response.status !== 200) throw new Unreachable(`${url}: HTTP ${response.status}`);
  });

/** Runs `work` with a one-connection database handle, closed afterwards. */
async function withDatabase<T>(work: (db: Database) => Promise<T>) {
  const database = createDatabase(config.databaseUrl, { max: 1 });
  try {
    return await work(database.db);
  } finally {
    await database.close();
  }
}

const token = program.command("token").description("bearer tokens of the read API");

const DURATION_UNITS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;

/** `30d`, `12h`, `90m`, `45s` in seconds. */
function parseDuration(value: string): number {
  const match = /^([1-9][0-9]{0,5})([smhd])$/.exec(value);
  if (!match) {
    throw new InvalidArgumentError("expected a whole number and a unit, e.g. 30d, 12h, 90m, 45s");
  }
  return Number(match[1]) * DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS];
}

token
  .command("create")
  .description("create a token and print it (the only time it is shown; only its hash is kept)")
  .requiredOption("--label <label>", "who or what the token is for", (value: string) => {
    if (value.trim() === "")
      throw new InvalidArgumentError("a label is required (who or what the token is for)");
    return value.trim();
  })
  .option(
    "--expires-in <duration>",
    "the token stops working this long from now (30d, 12h, 90m, 45s); never by default",
    parseDuration,
  )
  .action(async (options: { label: string; expiresIn?: number }) => {
    await checkServices({ database: "existing" });
    const created = await withDatabase((db) =>
      createToken(db, options.label, { expiresInSeconds: options.expiresIn }),
    );
    const expiry = created.expiresAt ? `, expires ${created.expiresAt.toISOString()}` : "";
    console.error(
      `token ${created.id} (${created.label}) created${expiry}; store it now, it is not kept:`,
    );
    console.log(created.token);
  });

token
  .command("list")
  .description("list tokens (ids, labels, state, expiry, last use; never the tokens)")
  .action(async () => {
    await checkServices({ database: "existing" });
    const rows = await withDatabase((db) => listTokens(db));
    for (const row of rows) {
      const state = row.revokedAt
        ? `revoked ${row.revokedAt.toISOString()}`
        : row.expired
          ? "expired"
          : "active";
      const expires = row.expiresAt ? `expires ${row.expiresAt.toISOString()}` : "never expires";
      // Written at most once a minute, in batches (api/modules/auth/usage.ts): up to 2 min behind.
      const used = row.lastUsedAt ? `last used ${row.lastUsedAt.toISOString()}` : "never used";
      console.log(
        `${row.id}\t${row.label}\tcreated ${row.createdAt.toISOString()}\t${state}\t${expires}\t${used}`,
      );
    }
    if (rows.length === 0) console.error("no tokens yet: `token create --label <label>`");
  });

token
  .command("revoke")
  .description(
    "revoke a token; the API refuses it from the next request on and ends its open streams",
  )
  .argument("<id>", "the token's id from `token list`", (value) => {
    if (!/^[0-9]{1,9}$/.test(value)) throw new InvalidArgumentError("expected a token id");
    return Number(value);
  })
  .action(async (id: number) => {
    await checkServices({ database: "existing" });
    const revoked = await withDatabase((db) => revokeToken(db, id));
    if (!revoked) throw new ConfigError(`no active token with id ${id}`);
    console.log(`token ${id} revoked`);
  });

program.parseAsync().catch((error: unknown) => {
  // Commander has printed the usage error (or the help) already.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  failAndExit(error, [BackfillLeavesGap, ChainMismatch, RangeAboveFinality]);
});
