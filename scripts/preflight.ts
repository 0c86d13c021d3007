/** Says plainly what is missing before anything starts: anvil, Postgres, Redis. */
import IORedis from "ioredis";
import postgres from "postgres";
import { anvilBinaryPath } from "../devnet/anvil.ts";
import { config } from "../lib/config.ts";
import { redactSecrets, safeUrl } from "../lib/error-cause.ts";

const problems: string[] = [];

try {
  anvilBinaryPath();
} catch (error) {
  problems.push((error as Error).message);
}

const admin = new URL(config.databaseUrl);
admin.pathname = "/postgres";
const sql = postgres(admin.toString(), { max: 1, connect_timeout: 5, onnotice: () => {} });
try {
  await sql`select 1`;
} catch (error) {
  problems.push(
    `Postgres is not reachable at ${admin.host} (DATABASE_URL): ${redactSecrets((error as Error).message)}. Start it, or point DATABASE_URL at one.`,
  );
} finally {
  await sql.end({ timeout: 1 });
}

const redis = new IORedis(config.redisUrl, {
  lazyConnect: true,
  connectTimeout: 5_000,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
});
try {
  await redis.connect();
  await redis.ping();
} catch (error) {
  problems.push(
    `Redis is not reachable at ${safeUrl(config.redisUrl)} (REDIS_URL): ${redactSecrets((error as Error).message)}. Start it, or point REDIS_URL at one.`,
  );
} finally {
  redis.disconnect();
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`preflight: ${problem}`);
  process.exit(1);
}
