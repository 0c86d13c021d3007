#!/usr/bin/env bun
/**
 * The whole system on a local devnet, in one command: anvil, the contracts, a seeded scenario,
 * the indexer following the head, the API, and live staking activity. Prints a curl that returns
 * a real staked S1 citizen with a token created for this run. Ctrl-C stops everything.
 *
 * The demo owns its database and queue prefix (DEMO_DATABASE_URL, default citizen_staking_demo;
 * DEMO_QUEUE_PREFIX, default citizen-staking-demo) and starts them empty each run: every run is
 * a new chain. On every way out (Ctrl-C, an error, a child that exits, such as an API whose port
 * is taken) it stops all it started.
 */
import { eq } from "drizzle-orm";
import postgres from "postgres";
import { startDashboardServer } from "../client/example/serve.ts";
import { createDatabase } from "../db/client.ts";
import { ensureDatabase, runMigrations } from "../db/migrate.ts";
import { indexerCheckpoints, stakedCitizens } from "../db/schema.ts";
import { createToken } from "../db/tokens.ts";
import { startAnvil } from "../devnet/anvil.ts";
import { createDevnetClient } from "../devnet/client.ts";
import { deployDevnet, writeDeploymentFile } from "../devnet/deploy.ts";
import { Scenario } from "../devnet/scenario.ts";
import { createQueues, redisConnection } from "../indexer/jobs/queues.ts";
import { config } from "../lib/config.ts";
import { failureLine } from "../lib/fail.ts";

const DEMO_EVENTS = 2_000;
const DEMO_QUEUE_PREFIX = process.env.DEMO_QUEUE_PREFIX ?? "citizen-staking-demo";
const databaseUrl = process.env.DEMO_DATABASE_URL ?? demoDatabaseUrl(config.databaseUrl);
const say = (line: string) => process.stderr.write(`demo: ${line}\n`);

function demoDatabaseUrl(base: string): string {
  const url = new URL(base);
  url.pathname = "/citizen_staking_demo";
  return url.toString();
}

async function recreateDatabase(url: string) {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = "/postgres";
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists "${name.replaceAll('"', "")}" with (force)`);
  await sql.end();
  await ensureDatabase(url);
  await runMigrations(url);
}

const children: Bun.Subprocess[] = [];
let dashboard: Awaited<ReturnType<typeof startDashboardServer>> | undefined;
let node: Awaited<ReturnType<typeof startAnvil>> | undefined;
const stop = new AbortController();
const shutdown = async (code: number) => {
  if (stop.signal.aborted) return;
  stop.abort();
  void dashboard?.stop();
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map((child) => child.exited));
  await node?.stop();
  process.exit(code);
};
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));
// Last resort for a way out that skipped shutdown: no child outlives the demo.
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
});

try {
  await main();
} catch (error) {
  say(`stopping: ${failureLine(error)}`);
  await shutdown(1);
}

async function main() {
  node = await startAnvil({ port: 8545 }).catch(() => startAnvil());

  say(`anvil on ${node.rpcUrl}`);
  const client = createDevnetClient(node.rpcUrl);
  const deployment = await deployDevnet(client);
  await writeDeploymentFile(config.chain.devnetFile, deployment);
  say(
    `contracts deployed (staker ${deployment.addresses.staker}), written to ${config.chain.devnetFile}`,
  );

  const scenario = await Scenario.prepare(client, deployment, { seed: "demo", wallets: 40 });
  const progress = await scenario.run({ events: DEMO_EVENTS });
  say(`scenario: ${progress.stakerEvents} staker events over ${progress.blocks} blocks`);

  await recreateDatabase(databaseUrl);
  {
    const redis = redisConnection(config.redisUrl);
    const queues = createQueues(redis, DEMO_QUEUE_PREFIX);
    await queues.chunks.obliterate({ force: true });
    await queues.follow.obliterate({ force: true });
    await queues.close();
    redis.disconnect();
  }
  const port = process.env.PORT ?? "3000";
  // The example dashboard on its own origin, which the API must then allow (CORS).
  dashboard = await startDashboardServer({ port: 3002 }).catch(() => startDashboardServer());
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: DEMO_QUEUE_PREFIX,
    RPC_URL: node.rpcUrl,
    STAKER_ADDRESS: deployment.addresses.staker,
    START_BLOCK: String(deployment.deployBlock),
    PORT: port,
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    CORS_ORIGINS: [process.env.CORS_ORIGINS, dashboard.origin].filter(Boolean).join(","),
  };
  const spawn = (name: string, command: string[]) => {
    const child = Bun.spawn(command, { env, stdout: "inherit", stderr: "inherit" });
    children.push(child);
    // Each child runs until the demo stops it; one that ends by itself ends the demo.
    void child.exited.then((code) => {
      if (stop.signal.aborted) return;
      say(`stopping: ${name} exited with code ${code}`);
      void shutdown(1);
    });
    return child;
  };
  spawn("the indexer (follow)", ["bun", "scripts/cli.ts", "follow", "--no-migrate"]);
  spawn("the API", ["bun", "api/main.ts"]);

  const database = createDatabase(databaseUrl, { max: 2 });
  const head = await client.getBlockNumber();
  while (!stop.signal.aborted) {
    const [checkpoint] = await database.db.select().from(indexerCheckpoints);
    if (checkpoint && checkpoint.indexedBlock >= head) break;
    await Bun.sleep(100);
  }
  say(`indexer caught up with block ${head}`);

  const { token } = await createToken(database.db, "demo");
  const [citizen] = await database.db
    .select({ staker: stakedCitizens.staker, citizenId: stakedCitizens.citizenId })
    .from(stakedCitizens)
    .where(eq(stakedCitizens.season, 1))
    .limit(1);
  if (!citizen) throw new Error("the scenario left no S1 citizen staked");
  const url = `http://127.0.0.1:${port}/v1/staking/citizens/s1/${citizen.citizenId}?address=${citizen.staker}`;
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(
      () => undefined,
    );
    if (response?.ok) break;
    if (attempt > 100) throw new Error(`the API did not answer ${url}`);
    await Bun.sleep(100);
  }
  await database.close();

  console.log(`
The devnet, the indexer and the API are running. Try:

  curl -s -H 'Authorization: Bearer ${token}' '${url}'

Dashboard (live, on another origin): ${dashboard.pageUrl({ apiUrl: `http://127.0.0.1:${port}`, token, address: citizen.staker })}

Also: http://127.0.0.1:${port}/docs (API docs), http://127.0.0.1:${port}/readyz,
      DATABASE_URL=${databaseUrl} QUEUE_PREFIX=${DEMO_QUEUE_PREFIX} RPC_URL=${node.rpcUrl} STAKER_ADDRESS=${deployment.addresses.staker} bun scripts/cli.ts status
New staking activity is mined every 2 seconds. Ctrl-C stops everything.
`);

  await scenario.live({ intervalMs: 2_000, signal: stop.signal });
}
