/**
 * Postgres dropping our connections under load: backends ended by pg_terminate_backend, and a
 * backend killed -9 (the server then ends every session and recovers). No process of ours may
 * die of it, whatever postgres.js says (read ECONNRESET, CONNECTION_ENDED, CONNECTION_DESTROYED)
 * and wherever it says it (a query, a rejection nobody awaited, an 'error' event). The server is
 * a private one: killing a backend restarts every session on it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { enqueueRange } from "../../indexer/queues/queues.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startPrivatePostgres } from "../support/private-postgres.ts";

/** Rounds of kills: each ends every session of ours, in bursts; every third kills a backend -9. */
const ROUNDS = 6;

let devnet: ScenarioDevnet;
let server: Awaited<ReturnType<typeof startPrivatePostgres>>;
let harness: TestIndexer;

beforeAll(async () => {
  [devnet, server] = await Promise.all([
    startScenarioDevnet({ events: 300, seed: "backend-kills" }),
    startPrivatePostgres(),
  ]);
  harness = await startTestIndexer({
    label: "backend-kills",
    rpcUrl: devnet.node.rpcUrl,
    staker: devnet.deployment.addresses.staker,
    database: await server.createDatabase("backend_kills"),
    options: { chunkSize: 3 },
  });
});

afterAll(async () => {
  await harness?.cleanup();
  await server?.stop();
  await devnet?.stop();
});

/** Runs an admin query once the server takes connections again (after a kill -9 it recovers). */
async function untilAccepting<T>(query: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await query();
    } catch (error) {
      if (attempt >= 60) throw error;
      await Bun.sleep(250);
    }
  }
}

test("a worker, a follower and the API outlive terminated and killed Postgres backends", async () => {
  const admin = postgres(server.primary.url(), { max: 1, onnotice: () => {} });
  const env = harness.cliEnv({ CONCURRENCY: "4", LOG_LEVEL: "info", PORT: "0" });
  const processes = {
    worker: startCommand(["scripts/cli.ts", "worker"], env),
    follow: startCommand(["scripts/cli.ts", "follow", "--no-migrate"], env),
    api: startCommand(["scripts/cli.ts", "api"], env),
  };
  const from = devnet.deployment.deployBlock;
  try {
    await processes.worker.waitForLine(/worker taking chunk jobs/, 60_000);
    await processes.follow.waitForLine(/"msg":"following"/, 60_000);
    const listening = await processes.api.waitForLine(/"msg":"listening"/, 60_000);
    const apiPort = (JSON.parse(listening) as { port: number }).port;
    for (let round = 1; round <= ROUNDS; round++) {
      // Work in flight when the kill lands: a reindex of every block, in many chunks.
      const head = await devnet.client.getBlockNumber();
      await enqueueRange(harness.indexer.queues.chunks, from, head, 3, true, Date.now());
      await devnet.scenario.run({ events: 5 });
      const reads = Array.from({ length: 5 }, () =>
        fetch(`http://127.0.0.1:${apiPort}/readyz`).catch(() => undefined),
      );
      await Bun.sleep(300);
      const ours = await untilAccepting(
        () => admin<{ pid: number }[]>`
          select pid from pg_stat_activity
          where datname = 'backend_kills' and pid <> pg_backend_pid()`,
      );
      if (round % 3 === 0 && ours.length > 0) {
        process.kill(ours[0]!.pid, "SIGKILL");
      } else {
        // A burst: sessions ended again while they reconnect, mid-handshake (postgres.js reads
        // the array types on each new connection, a query nobody awaits).
        for (let kill = 0; kill < 8; kill++) {
          await untilAccepting(
            () => admin`select pg_terminate_backend(pid) from pg_stat_activity
              where datname = 'backend_kills' and pid <> pg_backend_pid()`,
          );
          await Bun.sleep(20 + kill * 15);
        }
      }
      await Promise.all(reads);
      // The server takes a moment to recover after a kill -9; our admin session went with it.
      await Bun.sleep(1_500);
      for (const [name, child] of Object.entries(processes)) {
        const { exitCode } = child.child;
        const output = exitCode === null ? "" : child.lines.slice(-60).join("\n");
        expect({ round, name, exitCode, output }).toEqual({
          round,
          name,
          exitCode: null,
          output: "",
        });
      }
    }
  } finally {
    await admin.end({ timeout: 1 }).catch(() => {});
    // Every process stopped before any is judged: none outlives a failed test.
    const ended = [];
    for (const [name, child] of Object.entries(processes)) {
      const code = await child.stop();
      ended.push({ name, code, output: code === 0 ? "" : child.lines.slice(-60).join("\n") });
    }
    for (const { name, code, output } of ended) {
      expect({ name, code, output }).toEqual({ name, code: 0, output: "" });
    }
  }
}, 300_000);
