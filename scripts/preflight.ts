/** Says plainly what is missing before anything starts: anvil, Postgres, Redis. */
import postgres from "postgres";
import { anvilBinaryPath } from "../devnet/anvil.ts";
import { config } from "../lib/config.ts";
import { databaseHosts, withDatabase } from "../lib/database-url.ts";
import { redactSecrets } from "../lib/error-cause.ts";
import { describeRedis, openRedisOnce, redisVariable } from "../lib/redis.ts";

const problems: string[] = [];

try {
  anvilBinaryPath();
} catch (error) {
  problems.push((error as Error).message);
}

const sql = postgres(withDatabase(config.databaseUrl, "postgres"), {
  max: 1,
  connect_timeout: 5,
  onnotice: () => {},
});
try {
  await sql`select 1`;
} catch (error) {
  problems.push(
    `Postgres is not reachable at ${databaseHosts(config.databaseUrl)} (DATABASE_URL): ${redactSecrets((error as Error).message)}. Start it, or point DATABASE_URL at one.`,
  );
} finally {
  await sql.end({ timeout: 1 });
}

const redis = openRedisOnce(config.redis, 5_000);
redis.on("error", () => {
  // Reported once, below.
});
try {
  await redis.connect();
  await redis.ping();
} catch (error) {
  problems.push(
    `Redis is not reachable at ${describeRedis(config.redis)}: ${redactSecrets((error as Error).message)}. Start it, or point ${redisVariable(config.redis)} at one.`,
  );
} finally {
  redis.disconnect();
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`preflight: ${problem}`);
  process.exit(1);
}
