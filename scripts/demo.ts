#!/usr/bin/env bun
/**
 * The whole system on a local devnet, in one command: anvil, the contracts, a seeded scenario,
 * the indexer following the head, the API, and live staking activity. Prints a curl that returns
 * a real staked S1 citizen with a token created for this run. Ctrl-C stops everything.
 *
 * Several demos may run side by side, and beside the test suite: each owns its node (anvil on
 * 8545, or on a free port when 8545 is taken), its API port (3000, or a free one; PORT, when set,
 * is taken as given) and a database and queue prefix named after its node's port
 * (citizen_staking_demo_<port>, citizen-staking-demo-<port>; DEMO_DATABASE_URL and
 * DEMO_QUEUE_PREFIX override them). It starts them empty each run: every run is a new chain.
 * On every way out (Ctrl-C, an error, a child that exits) it stops all it started.
 *
 * Flags: --events N (staker events of the seeded scenario, default 2000), --node-port N and
 * --api-port N (the ports it tries first).
 */
import { parseArgs } from "node:util";
import { eq } from "drizzle-orm";
import postgres from "postgres";
import { startDashboardServer } from "../client/example/serve.ts";
import { createDatabase } from "../db/client.ts";
import { ensureDatabase, runMigrations } from "../db/migrate.ts";
import { indexerCheckpoints, stakedCitizens } from "../db/schema.ts";
import { createToken } from "../db/tokens.ts";
import {
  AnvilPortInUse,
  demoKeptStates,
  freePort,
  isPortFree,
  startAnvil,
} from "../devnet/anvil.ts";
import { createDevnetClient } from "../devnet/client.ts";
import { deployDevnet, writeDeploymentFile } from "../devnet/deploy.ts";
import { Scenario, scenarioBlocks } from "../devnet/scenario.ts";
import { createQueues } from "../indexer/queues/queues.ts";
import { config } from "../lib/config.ts";
import { parseDatabaseUrl, withDatabase } from "../lib/database-url.ts";
import { failureLine } from "../lib/fail.ts";
import { openRedis } from "../lib/redis.ts";

const { values: flags } = parseArgs({
  options: {
    events: { type: "string", default: "2000" },
    "node-port": { type: "string", default: "8545" },
    "api-port": { type: "string", default: "3000" },
    "live-minutes": { type: "string", default: "60" },
  },
});
const say = (line: string) => process.stderr.write(`demo: ${line}\n`);

function positiveInteger(flag: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed <= 0) {
    say(`--${flag} must be a positive integer, not ${value}`);
    process.exit(2);
  }
  return parsed;
}
const events = positiveInteger("events", flags.events);
const preferredNodePort = positiveInteger("node-port", flags["node-port"]);
const preferredApiPort = positiveInteger("api-port", flags["api-port"]);
/**
 * How long new staking activity is mined. anvil grows with every block it mines, however few
 * states it keeps (docs/decisions/demo-node-states.md), so a demo left running stops mining after
 * this long and then stays the size it is: the indexer, the API and the dashboard keep serving.
 */
const liveMinutes =
  flags["live-minutes"] === "0" ? 0 : positiveInteger("live-minutes", flags["live-minutes"]);

/** Named after the node's port, which no other running demo can hold. */
function demoDatabaseUrl(nodePort: number): string {
  if (process.env.DEMO_DATABASE_URL) return process.env.DEMO_DATABASE_URL;
  return withDatabase(config.databaseUrl, `citizen_staking_demo_${nodePort}`);
}
const demoQueuePrefix = (nodePort: number) =>
  process.env.DEMO_QUEUE_PREFIX ?? `citizen-staking-demo-${nodePort}`;

/** The preferred port when nothing holds it, else one the OS says is free. */
async function pickPort(preferred: number, what: string): Promise<number> {
  if (await isPortFree(preferred)) return preferred;
  const port = await freePort();
  say(`${what} port ${preferred} is taken; using ${port}`);
  return port;
}

/**
 * Our own node: on the preferred port, or on a free one when something else holds it. It keeps
 * only the states the indexer reads, so a demo left running stays small (devnet/anvil.ts).
 */
async function startNode() {
  const kept = demoKeptStates(scenarioBlocks(events).blocks);
  const keeping = { pruneHistory: kept, keptTransactionBlocks: kept };
  try {
    return await startAnvil({ port: preferredNodePort, ...keeping });
  } catch (error) {
    if (!(error instanceof AnvilPortInUse)) throw error;
    const started = await startAnvil(keeping);
    say(`node port ${preferredNodePort} is taken; anvil took ${started.port}`);
    return started;
  }
}

async function recreateDatabase(url: string) {
  const name = parseDatabaseUrl(url).database;
  const sql = postgres(withDatabase(url, "postgres"), { max: 1, onnotice: () => {} });
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
  node = await startNode();
  say(`anvil on ${node.rpcUrl}`);
  const databaseUrl = demoDatabaseUrl(node.port);
  const queuePrefix = demoQueuePrefix(node.port);
  const client = createDevnetClient(node.rpcUrl);
  const deployment = await deployDevnet(client);
  await writeDeploymentFile(config.chain.devnetFile, deployment);
  say(
    `contracts deployed (staker ${deployment.addresses.staker}), written to ${config.chain.devnetFile}`,
  );

  const scenario = await Scenario.prepare(client, deployment, { seed: "demo", wallets: 40 });
  const progress = await scenario.run({ events });
  say(`scenario: ${progress.stakerEvents} staker events over ${progress.blocks} blocks`);

  await recreateDatabase(databaseUrl);
  {
    const redis = openRedis(config.redis, "queues");
    const queues = createQueues(redis, queuePrefix);
    await queues.chunks.obliterate({ force: true });
    await queues.follow.obliterate({ force: true });
    await queues.close();
    redis.disconnect();
  }
  // The example dashboard on its own origin, which the API must then allow (CORS).
  dashboard = await startDashboardServer({ port: 3002 }).catch(() => startDashboardServer());
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: queuePrefix,
    RPC_URL: node.rpcUrl,
    STAKER_ADDRESS: deployment.addresses.staker,
    START_BLOCK: String(deployment.deployBlock),
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    CORS_ORIGINS: [process.env.CORS_ORIGINS, dashboard.origin].filter(Boolean).join(","),
  };
  // Each child runs until the demo stops it; one that ends by itself ends the demo, unless
  // `retry` takes it over.
  const spawn = (
    name: string,
    command: string[],
    extraEnv: Record<string, string> = {},
    retry: (code: number) => boolean = () => false,
  ) => {
    const child = Bun.spawn(command, {
      env: { ...env, ...extraEnv },
      stdout: "inherit",
      stderr: "inherit",
    });
    children.push(child);
    void child.exited.then((code) => {
      if (stop.signal.aborted || retry(code)) return;
      say(`stopping: ${name} exited with code ${code}`);
      void shutdown(1);
    });
  };
  spawn("the indexer (follow)", ["bun", "scripts/cli.ts", "follow", "--no-migrate"]);

  const portIsGiven = process.env.PORT !== undefined;
  let port = portIsGiven ? Number(process.env.PORT) : await pickPort(preferredApiPort, "API");
  let serving = false;
  const startApi = (retriesLeft: number) =>
    spawn("the API", ["bun", "api/main.ts"], { PORT: String(port) }, (code) => {
      // Exit 2 before serving: another demo bound the port between our look and the API's bind.
      if (code !== 2 || serving || portIsGiven || retriesLeft === 0) return false;
      void freePort().then((free) => {
        say(`API port ${port} was taken meanwhile; using ${free}`);
        port = free;
        startApi(retriesLeft - 1);
      });
      return true;
    });
  startApi(1);

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
  const path = `/v1/staking/citizens/s1/${citizen.citizenId}?address=${citizen.staker}`;
  // Only our API knows this run's token, so a 200 also proves the port is ours.
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => undefined);
    if (response?.ok) break;
    if (attempt > 300) throw new Error(`the API did not answer on port ${port}`);
    await Bun.sleep(100);
  }
  serving = true;
  await database.close();
  const url = `http://127.0.0.1:${port}${path}`;

  console.log(`
The devnet, the indexer and the API are running. Try:

  curl -s -H 'Authorization: Bearer ${token}' '${url}'

Dashboard (live, on another origin): ${dashboard.pageUrl({ apiUrl: `http://127.0.0.1:${port}`, token, address: citizen.staker })}

Also: http://127.0.0.1:${port}/docs (API docs), http://127.0.0.1:${port}/readyz,
      DATABASE_URL=${databaseUrl} QUEUE_PREFIX=${queuePrefix} RPC_URL=${node.rpcUrl} STAKER_ADDRESS=${deployment.addresses.staker} bun scripts/cli.ts status
New staking activity is mined every 2 seconds${liveMinutes === 0 ? "" : ` for ${liveMinutes} minutes (--live-minutes; 0: until Ctrl-C)`}. Ctrl-C stops everything.
`);

  const live =
    liveMinutes === 0
      ? stop.signal
      : AbortSignal.any([stop.signal, AbortSignal.timeout(liveMinutes * 60_000)]);
  await scenario.live({ intervalMs: 2_000, signal: live });
  if (stop.signal.aborted) return;
  say(
    `no more staking activity after ${liveMinutes} minutes (--live-minutes): the node mines nothing more, so the demo stays the size it is; everything keeps serving until Ctrl-C`,
  );
  await new Promise((resolve) => stop.signal.addEventListener("abort", resolve, { once: true }));
}
