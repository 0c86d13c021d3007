/**
 * The API bench's baseline: Bun.serve answering the one-citizen path with one primary-key query,
 * the row's columns as JSON, and nothing else (no auth, rate limit, validation or shaping).
 *
 * `bun bench/servers/primary-key.ts <postgres.js|bun-sql> <pool size>`; DATABASE_URL, HOST and
 * PORT as for the API.
 */
import { SQL } from "bun";
import { getTableColumns } from "drizzle-orm";
import postgres from "postgres";
import { stakedCitizens } from "../../db/schema.ts";
import { config } from "../../lib/config.ts";

const [client, pool] = [Bun.argv[2], Number(Bun.argv[3])];
if ((client !== "postgres.js" && client !== "bun-sql") || !(pool >= 1)) {
  throw new Error("usage: primary-key.ts <postgres.js|bun-sql> <pool size>");
}

/** Both clients' tagged-template queries, as the one lookup below calls them. */
type Query = (strings: readonly string[], ...values: unknown[]) => Promise<unknown[]>;

function connect(): { sql: Query; close: () => Promise<void> } {
  if (client === "postgres.js") {
    const sql = postgres(config.databaseUrl, { max: pool, onnotice: () => {} });
    return { sql: sql as unknown as Query, close: () => sql.end({ timeout: 5 }) };
  }
  const sql = new SQL({ url: config.databaseUrl, max: pool });
  return { sql: sql as unknown as Query, close: () => sql.close({ timeout: 5 }) };
}

const { sql, close } = connect();
/** The lookup as a tagged template's strings (Bun's SQL takes no column list in a select). */
const columns = Object.values(getTableColumns(stakedCitizens)).map((column) => column.name);
const select = `select "${columns.filter((name) => !name.startsWith("record")).join('", "')}"`;
const parts = `${select} from staked_citizens where season = ? and citizen_id = ? and staker = ?`;
const strings = parts.split("?");
const lookup = Object.defineProperty(strings, "raw", { value: strings });
const CITIZEN_PATH = /^\/v1\/staking\/citizens\/s([12])\/(\d{1,78})$/;

const server = Bun.serve({
  hostname: config.api.host,
  port: config.api.port,
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/healthz") return Response.json({ status: "ok" });
    const match = CITIZEN_PATH.exec(url.pathname);
    const address = url.searchParams.get("address")?.toLowerCase();
    if (!match || !address) return new Response(null, { status: 404 });
    const [row] = await sql(lookup, Number(match[1]), match[2], address);
    return row ? Response.json(row) : Response.json({ status: 404 }, { status: 404 });
  },
});

process.on("SIGTERM", async () => {
  server.stop();
  await close();
  process.exit(0);
});
