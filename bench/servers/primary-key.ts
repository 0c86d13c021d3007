/**
 * Baseline (b) of the API bench: Bun.serve answering the API's one-citizen path with the same
 * single-row primary-key query done straight with postgres.js, pool size as the API's
 * (DB_POOL_SIZE). What HTTP plus one Postgres round trip costs, without auth, rate limit,
 * validation or shaping.
 *
 * `bun bench/servers/primary-key.ts`; DATABASE_URL, DB_POOL_SIZE, HOST and PORT as for the API.
 */
import postgres from "postgres";
import { config } from "../../lib/config.ts";

const sql = postgres(config.databaseUrl, { max: config.api.poolSize, onnotice: () => {} });
const CITIZEN_PATH = /^\/v1\/staking\/citizens\/s([12])\/(\d{1,78})$/;

const server = Bun.serve({
  hostname: config.api.host,
  port: config.api.port,
  async fetch(request) {
    const url = new URL(request.url);
    const match = CITIZEN_PATH.exec(url.pathname);
    const address = url.searchParams.get("address")?.toLowerCase();
    if (!match || !address) return new Response(null, { status: 404 });
    const [row] = await sql`
      select * from staked_citizens
      where season = ${Number(match[1])} and citizen_id = ${match[2]!} and staker = ${address}`;
    return row ? Response.json(row) : Response.json({ status: 404 }, { status: 404 });
  },
});

process.on("SIGTERM", async () => {
  server.stop();
  await sql.end({ timeout: 5 });
  process.exit(0);
});
