#!/usr/bin/env bun
/**
 * The whole system on a local devnet, in one command: anvil, the contracts, a seeded scenario,
 * the indexer following the head, the API, and live staking activity. Prints a curl that returns
 * a real staked S1 citizen with a token created for this run. Ctrl-C stops everything.
 *
 * The demo owns its database and queue prefix (DEMO_DATABASE_URL, default citizen_staking_demo)
 * and starts them empty each run: every run is a new chain.
 */
import { eq } from "drizzle-orm";
import postgres from "postgres";
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

const DEMO_EVENTS = 2_000;
const DEMO_QUEUE_PREFIX = "citizen-staking-demo";
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
const node = await startAnvil({ port: 8545 }).catch(() => startAnvil());
const stop = new AbortController();
const shutdown = async () => {
  if (stop.signal.aborted) return;
  stop.abort();
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map((child) => child.exited));
  await node.stop();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());

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
const env = {
  ...process.env,
  DATABASE_URL: databaseUrl,
  QUEUE_PREFIX: DEMO_QUEUE_PREFIX,
  RPC_URL: node.rpcUrl,
  STAKER_ADDRESS: deployment.addresses.staker,
  START_BLOCK: String(deployment.deployBlock),
  PORT: port,
  LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
};
const spawn = (command: string[]) => {
  const child = Bun.spawn(command, { env, stdout: "inherit", stderr: "inherit" });
  children.push(child);
  return child;
};
spawn(["bun", "scripts/cli.ts", "follow", "--no-migrate"]);
spawn(["bun", "api/main.ts"]);

const database = createDatabase(databaseUrl, { max: 2 });
const head = await client.getBlockNumber();
for (;;) {
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

Also: http://127.0.0.1:${port}/docs (API docs), http://127.0.0.1:${port}/readyz,
      DATABASE_URL=${databaseUrl} RPC_URL=${node.rpcUrl} STAKER_ADDRESS=${deployment.addresses.staker} bun scripts/cli.ts status
New staking activity is mined every 2 seconds. Ctrl-C stops everything.
`);

await scenario.live({ intervalMs: 2_000, signal: stop.signal });
