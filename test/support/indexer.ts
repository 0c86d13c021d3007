import type { Address } from "viem";
import { createDatabase } from "../../db/client.ts";
import { createIndexer, type Indexer, type IndexerOptions } from "../../indexer/indexer.ts";
import { createIndexerStore } from "../../indexer/store/index.ts";
import { citizenStakers, verifyAgainstChain } from "../../ops/verify.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { type From, runCommand } from "./commands.ts";
import type { DevnetChain } from "./scenario-chain.ts";

/** Seconds a harness's Postgres connection stays open unused. */
const IDLE_SECONDS = 2;

export class IndexerStalled extends Error {
  override name = "IndexerStalled";
}

/** An indexer on a scratch database and Redis prefix of its own; `cleanup()` removes both. */
export async function startTestIndexer(input: {
  label: string;
  rpcUrl: string;
  staker: Address;
  options?: Partial<IndexerOptions>;
  /** Rewrites the URLs the indexer connects with (through a proxy, say); checks stay direct. */
  route?: { database?: (url: string) => string; redis?: (url: string) => string };
  /** The Postgres server to make the scratch database on; DATABASE_URL's otherwise. */
  databaseServer?: string;
  /** A migrated database on a server of the test's own; a scratch one on DATABASE_URL otherwise. */
  database?: { name: string; url: string; drop(): Promise<void> };
}) {
  const database =
    input.database ?? (await createScratchDatabase(input.label, input.databaseServer));
  const redis = createScratchRedisPrefix(input.label);
  const options: IndexerOptions = {
    rpcUrl: input.rpcUrl,
    databaseUrl: input.route?.database?.(database.url) ?? database.url,
    redis: { url: input.route?.redis?.(redis.url) ?? redis.url },
    queuePrefix: redis.prefix,
    staker: input.staker,
    chunkSize: 20,
    concurrency: 4,
    confirmations: 0,
    followIntervalMs: 100,
    maxLogRange: 10_000,
    // Scenario devnets never reorg unless a test says so: chunk jobs may index up to the head.
    // Tests of reorgs pass `finalityDepth: undefined` (the node's finalized tag) or their own.
    finalityDepth: 0,
    // A file keeps its harnesses until afterAll: idle ones give their connections back, so the
    // suite's files at once stay well under Postgres's 100.
    databaseIdleSeconds: IDLE_SECONDS,
    ...input.options,
  };
  const indexers: Indexer[] = [];
  const open = async (overrides: Partial<IndexerOptions> = {}) => {
    const indexer = await createIndexer({ ...options, ...overrides });
    indexers.push(indexer);
    return indexer;
  };
  const indexer = await open();
  // Checks read the tables directly, whatever route the indexer itself takes; one connection
  // pipelines them.
  const checkDatabase = createDatabase(database.url, { max: 1, idleTimeout: IDLE_SECONDS });
  const checks = createIndexerStore(checkDatabase.db);
  return {
    indexer,
    options,
    database,
    redis,
    /** Another indexer process's view: same database and queues, its own connections. */
    open,
    async waitForBlock(target: bigint, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const checkpoint = await checks.checkpoint();
        if (checkpoint && checkpoint.indexedBlock >= target) return checkpoint.indexedBlock;
        const failed = await indexer.queues.chunks.getFailed(0, 0);
        if (failed[0])
          throw new IndexerStalled(`chunk job ${failed[0].id} failed: ${failed[0].failedReason}`);
        if (Date.now() > deadline) {
          throw new IndexerStalled(
            `indexed block ${checkpoint?.indexedBlock} never reached ${target}`,
          );
        }
        await Bun.sleep(50);
      }
    },
    /** Waits until the indexer holds the node's current head block, by number and hash. */
    async waitForHead(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const head = await indexer.client.getBlock({ blockTag: "latest" });
        const checkpoint = await checks.checkpoint();
        if (
          checkpoint?.indexedBlock === head.number &&
          (await checks.storedHash(head.number)) === head.hash.toLowerCase()
        ) {
          return head.number;
        }
        if (Date.now() > deadline) {
          throw new IndexerStalled(
            `indexed block ${checkpoint?.indexedBlock}, head ${head.number} (${head.hash})`,
          );
        }
        await Bun.sleep(25);
      }
    },
    /** The environment a `scripts/cli.ts` process needs to work on this indexer's state. */
    cliEnv(extra: Record<string, string> = {}): Record<string, string> {
      return {
        ...(process.env as Record<string, string>),
        RPC_URL: options.rpcUrl,
        STAKER_ADDRESS: options.staker,
        DATABASE_URL: database.url,
        REDIS_URL: redis.url,
        QUEUE_PREFIX: redis.prefix,
        CHUNK_SIZE: String(options.chunkSize),
        ...(options.finalityDepth !== undefined && {
          FINALITY_DEPTH: String(options.finalityDepth),
        }),
        LOG_LEVEL: "warn",
        ...extra,
      };
    },
    /** Runs one CLI command to its end, as an operator would. */
    cli(args: string[], extra: Record<string, string> = {}, from: From = {}) {
      return runCommand(["scripts/cli.ts", ...args], this.cliEnv(extra), 120_000, from);
    },
    /** Every mismatch between the tables and the staker's views at the indexed block. */
    async mismatches(wallets?: string[]) {
      const checkpoint = await checks.checkpoint();
      if (!checkpoint) throw new IndexerStalled("nothing indexed");
      return verifyAgainstChain({
        client: indexer.client,
        db: checkDatabase.db,
        contracts: indexer.contracts,
        at: checkpoint.indexedBlock,
        wallets: wallets ?? (await citizenStakers(checkDatabase.db)),
      });
    },
    async cleanup() {
      for (const each of indexers.splice(0)) await each.close().catch(() => {});
      await checkDatabase.close();
      await redis.clean();
      await database.drop();
    },
  };
}

export type TestIndexer = Awaited<ReturnType<typeof startTestIndexer>>;
export type IndexedDevnet = Awaited<ReturnType<typeof indexDevnet>>;

/** A test indexer on a scenario devnet's node and staker (not started, nothing queued). */
export function startDevnetIndexer(
  devnet: DevnetChain,
  label: string,
  options: Partial<IndexerOptions> = {},
) {
  return startTestIndexer({
    label,
    rpcUrl: devnet.node.rpcUrl,
    staker: devnet.deployment.addresses.staker,
    options,
  });
}

/**
 * An indexed devnet: a test indexer over `devnet` (through `rpcUrl` when given: a proxy, say)
 * that has backfilled from the deploy block to `to` (default: the finality boundary) through
 * chunk jobs and, with `follow`, follows the head and has reached it. Cleans up after itself
 * when indexing fails; otherwise the caller's cleanup() does.
 */
export async function indexDevnet(
  devnet: DevnetChain,
  input: {
    label: string;
    rpcUrl?: string;
    options?: Partial<IndexerOptions>;
    to?: bigint;
    follow?: boolean;
    timeoutMs?: number;
    databaseServer?: string;
  },
) {
  const harness = await startTestIndexer({
    label: input.label,
    rpcUrl: input.rpcUrl ?? devnet.node.rpcUrl,
    staker: devnet.deployment.addresses.staker,
    options: input.options,
    databaseServer: input.databaseServer,
  });
  try {
    const backfill = await harness.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
      to: input.to,
    });
    await harness.indexer.start({ follow: input.follow ?? false });
    const indexedBlock = input.follow
      ? await harness.waitForHead(input.timeoutMs)
      : await harness.waitForBlock(backfill.to, input.timeoutMs);
    return Object.assign(harness, { backfill, indexedBlock });
  } catch (error) {
    await harness.cleanup();
    throw error;
  }
}
