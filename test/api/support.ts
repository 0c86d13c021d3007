/**
 * Builds the API the way api/main.ts does, on a scratch database and a scratch Redis prefix, with
 * helpers to write the rows the indexer would have written. Suites that drive the real indexer
 * (chain-oracle tests) can call `createApiHarness` with their own database URL.
 */
import { and, eq, sql } from "drizzle-orm";
import pino, { type Logger } from "pino";
import { type ApiSettings, createApp } from "../../api/app.ts";
import { openConnections } from "../../api/connections.ts";
import { indexerCheckpoints, stakedCitizens } from "../../db/schema.ts";
import { createToken } from "../../db/tokens.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";

export type CitizenInsert = typeof stakedCitizens.$inferInsert;

export const STAKER = "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed";
export const CHECKPOINT_STAKER = "0x1111111111111111111111111111111111111111";

export interface HarnessOptions {
  settings?: Partial<ApiSettings>;
  /** Use an existing (migrated) database instead of a scratch one. */
  databaseUrl?: string;
  /** Read answers from this hot standby of `databaseUrl` (DATABASE_READ_URL). */
  databaseReadUrl?: string;
  redisUrl?: string;
  log?: Logger;
  chainHead?: () => Promise<bigint>;
}

export async function createApiHarness(options: HarnessOptions = {}) {
  const scratch = options.databaseUrl ? undefined : await createScratchDatabase("api");
  const databaseUrl = options.databaseUrl ?? scratch!.url;
  const redisPrefix = createScratchRedisPrefix("api");
  const connections = openConnections({
    databaseUrl,
    databaseReadUrl: options.databaseReadUrl,
    redis: { url: options.redisUrl ?? redisPrefix.url },
    poolSize: 4,
  });
  // The helpers below write, so they use the primary (the same database without a replica).
  const db = connections.primary;
  const app = createApp({
    db: connections.db,
    primary: db,
    reads: connections.reads,
    redis: connections.redis,
    log: options.log ?? pino({ level: "silent" }),
    chainHead: options.chainHead,
    watchIndexedBlock: connections.watchIndexedBlock,
    watchRevokedTokens: connections.watchRevokedTokens,
    settings: {
      rateLimitPerMinute: 10_000,
      readyMaxLagBlocks: 5,
      keyPrefix: redisPrefix.prefix,
      responseCacheEntries: 1_000,
      ...options.settings,
    },
  });
  const { token, id: tokenId } = await createToken(db, "test");

  return {
    app,
    db,
    token,
    tokenId,
    redisPrefix: redisPrefix.prefix,
    databaseUrl,
    /** In-process request with the harness token unless `headers` say otherwise. */
    request(path: string, init: RequestInit = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
      return app.handle(new Request(`http://localhost${path}`, { ...init, headers }));
    },
    async setCheckpoint(indexedBlock: bigint) {
      await db
        .insert(indexerCheckpoints)
        .values({
          staker: CHECKPOINT_STAKER,
          chainId: 31337,
          indexedBlock,
          scheduledBlock: indexedBlock,
        })
        .onConflictDoUpdate({
          target: indexerCheckpoints.staker,
          // As the indexer does: every checkpoint write stamps updated_at (the data version).
          set: { indexedBlock, scheduledBlock: indexedBlock, updatedAt: sql`clock_timestamp()` },
        });
    },
    /** Writes rows and, as the indexer does with every write, touches the checkpoint. */
    async insertCitizens(rows: Partial<CitizenInsert>[]) {
      if (rows.length === 0) return;
      await db.transaction(async (tx) => {
        await tx.insert(stakedCitizens).values(rows.map(citizenRow));
        await tx.update(indexerCheckpoints).set({ updatedAt: sql`clock_timestamp()` });
      });
    },
    async removeCitizen(season: number, citizenId: bigint) {
      await db.transaction(async (tx) => {
        await tx
          .delete(stakedCitizens)
          .where(and(eq(stakedCitizens.season, season), eq(stakedCitizens.citizenId, citizenId)));
        await tx.update(indexerCheckpoints).set({ updatedAt: sql`clock_timestamp()` });
      });
    },
    async close() {
      await connections.close();
      await redisPrefix.clean();
      await scratch?.drop();
    },
  };
}

/** A plausible staked citizen; S1 fields are filled for season 1 only, as the indexer does. */
export function citizenRow(overrides: Partial<CitizenInsert>): CitizenInsert {
  const season = overrides.season ?? 1;
  const citizenId = overrides.citizenId ?? 1n;
  const s1 =
    season === 1
      ? {
          isHand: false,
          creditYield: "Mid",
          identityPoints: 150n,
          vaultId: 0n,
          vaultCreditMultiplier: null,
          vaultMultiplier: 100n,
          stakedVaultId: 0n,
          hasVault: false,
        }
      : {};
  return {
    season,
    citizenId,
    staker: STAKER,
    stakeBlockNumber: 10n,
    stakeLogIndex: Number(citizenId % 1000n),
    identityId: citizenId + 1000n,
    itemCacheId: citizenId + 2000n,
    landDeedId: citizenId + 3000n,
    timelockDuration: 2_592_000n,
    timelockMultiplier: 100n,
    timelockEndTime: 1_700_000_000n,
    stakedBytes: 0n,
    bytesPoints: 0n,
    totalPoints: season === 1 ? 150n : 100n,
    ...s1,
    ...overrides,
  };
}

/** A record as a client parses it: the dashboard client's own type (one home). */
export type { Wire } from "../../client/types.ts";

/** A response body, typed by the caller (the tests check shapes with the `t` schemas too). */
export async function json<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}
