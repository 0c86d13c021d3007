/**
 * Postgres fails over under a running fleet. A private primary and a synchronous
 * `pg_basebackup -R` hot standby (test/support/private-postgres.ts); `follow`, a `worker` and the
 * API reach them only through a DATABASE_URL naming both, `target_session_attrs=primary`. While
 * blocks of staking are mined and a reindex keeps chunk jobs running, the primary is stopped as a
 * crash would stop it (`pg_ctl stop -m immediate`) and the standby promoted (`pg_ctl promote`):
 * every process finds the new primary by itself and goes on, nothing committed is lost (the
 * standby is synchronous), nothing is written twice, `verify` is clean and the API equals the
 * staker's views. The time from the stop to the first write on the new primary is printed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { neoTokyoStakerAbi } from "../../contracts/generated/index.ts";
import { createDatabase } from "../../db/client.ts";
import { freePort } from "../../devnet/anvil.ts";
import { citizenStakers } from "../../ops/verify.ts";
import { pollApi } from "../support/api-poller.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { type ApiRecord, apiHolding, chainHolding } from "../support/holdings.ts";
import { startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import {
  type PrivatePostgres,
  type Standby,
  startPrivatePostgres,
} from "../support/private-postgres.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

/** A block with staking in it every this often, throughout. */
const BLOCK_MS = 300;

const STAKER_EVENTS = neoTokyoStakerAbi.filter(
  (item) => item.type === "event" && ["Stake", "Withdraw", "Claim"].includes(item.name),
);

let cluster: PrivatePostgres;
let standby: Standby;
let devnet: ScenarioDevnet;
let harness: TestIndexer;
/** The test's own reads, through the same multi-host URL. */
let checks: ReturnType<typeof createDatabase>;
const live = new AbortController();
let staking: Promise<void>;
const running: ReturnType<typeof startCommand>[] = [];
const clients: postgres.Sql[] = [];

beforeAll(async () => {
  [cluster, devnet] = await Promise.all([
    startPrivatePostgres(),
    startScenarioDevnet({ events: 200, seed: "postgres-promotion" }),
  ]);
  standby = await cluster.addStandby({ synchronous: true });
  const name = `cs_promotion_${process.pid}`;
  const database = await cluster.createDatabase(name);
  harness = await startTestIndexer({
    label: "promotion",
    rpcUrl: devnet.node.rpcUrl,
    staker: devnet.deployment.addresses.staker,
    // Every connection of the test's own follows the promotion as the processes' do.
    database: { ...database, url: cluster.hostsUrl(name) },
    options: { chunkSize: 4 },
  });
  checks = createDatabase(cluster.hostsUrl(name), { max: 2 });
  await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
}, 4 * LOADED_MACHINE_MS);

afterAll(async () => {
  live.abort();
  await staking?.catch(() => {});
  for (const command of running) {
    command.child.kill("SIGKILL");
    await command.child.exited;
  }
  for (const sql of clients) await sql.end({ timeout: 1 }).catch(() => {});
  await checks?.close();
  await harness?.cleanup().catch(console.error);
  await devnet?.stop();
  await cluster?.stop();
});

const start = (args: string[], extra: Record<string, string> = {}) => {
  const command = startCommand(args, harness.cliEnv({ LOG_LEVEL: "info", ...extra }));
  running.push(command);
  return command;
};

test("a DATABASE_URL naming several hosts must ask for the primary; DATABASE_READ_URL names one", async () => {
  const SECRET = "promotionSecret7c1f";
  const hosts = `postgres://cs:${SECRET}@127.0.0.1:5432,127.0.0.1:5433/citizen_staking`;
  const refused: [string, string, string][] = [
    ["DATABASE_URL", hosts, "target_session_attrs=primary"],
    ["DATABASE_URL", `${hosts}?target_session_attrs=read-write`, "target_session_attrs=primary"],
    ["DATABASE_URL", `${hosts}?target_session_attrs=leader`, "expected one of"],
    ["DATABASE_URL", `postgres://cs:${SECRET}@127.0.0.1:5432,/x`, "not a URL"],
    ["DATABASE_READ_URL", `${hosts}?target_session_attrs=standby`, "takes one standby"],
  ];
  const results = await Promise.all(
    refused.map(([variable, value]) =>
      runCommand(["lib/config.ts"], { ...process.env, [variable]: value }),
    ),
  );
  results.forEach((result, index) => {
    const [variable, , reason] = refused[index]!;
    expect({ code: result.code, lines: result.stderr.trim().split("\n").length }).toEqual({
      code: 2,
      lines: 1,
    });
    expect(result.stderr).toContain(variable);
    expect(result.stderr).toContain(reason);
    expect(result.stderr).not.toContain(SECRET);
  });
  const accepted = await runCommand(["lib/config.ts"], {
    ...process.env,
    DATABASE_URL: `${hosts}?target_session_attrs=primary`,
  });
  expect(accepted.code).toBe(0);
});

test("while no server is primary, a query fails after one pass over the hosts, it does not wait", async () => {
  // A host nobody listens on, and the standby (in recovery): what a promotion's gap looks like.
  const url = `postgres://postgres@127.0.0.1:${await freePort()},127.0.0.1:${standby.server.port}/postgres?target_session_attrs=primary`;
  const pool = createDatabase(url, { max: 1, connectTimeout: 2 });
  try {
    const bound = 2_000 + LOADED_MACHINE_MS;
    const outcome = await Promise.race([
      pool.client`select 1`.then(
        () => "answered",
        (error: Error) => `failed: ${error.message}`,
      ),
      Bun.sleep(bound).then(() => `still waiting after ${bound} ms`),
    ]);
    expect(outcome).toStartWith("failed: ");
  } finally {
    await pool.close();
  }
});

test(
  "the primary stopped, the standby promoted: follow, worker and API go on, nothing lost or doubled",
  async () => {
    try {
      const created = await harness.cli(["token", "create", "--label", "promotion"]);
      expect(created.code).toBe(0);
      const token = created.stdout.trim().split("\n").at(-1)!;
      const port = await freePort();
      const api = start(["api/main.ts"], { PORT: String(port) });
      const follow = start(["scripts/cli.ts", "follow", "--no-migrate"], { CONCURRENCY: "2" });
      const worker = start(["scripts/cli.ts", "worker"], { CONCURRENCY: "2" });
      await Promise.all([
        api.waitForLine(/"msg":"listening"/),
        worker.waitForLine(/worker taking chunk jobs/),
      ]);
      await harness.waitForHead(2 * LOADED_MACHINE_MS);
      staking = devnet.scenario.live({
        intervalMs: BLOCK_MS,
        transactionsPerBlock: 2,
        signal: live.signal,
      });

      // Chunk jobs in flight when the primary goes: a reindex of everything indexed so far, a job
      // a block.
      const indexed = (await harness.indexer.store.checkpoint())!.indexedBlock;
      const reindex = await harness.cli(
        [
          "reindex",
          "--from",
          String(devnet.deployment.deployBlock),
          "--to",
          String(indexed),
          "--enqueue-only",
        ],
        { CHUNK_SIZE: "1" },
      );
      expect(reindex.code).toBe(0);
      const chunkCounts = () =>
        harness.indexer.queues.chunks.getJobCounts("waiting", "active", "delayed", "prioritized");
      // Until one runs (or, on a fast machine, every one has run already).
      for (;;) {
        const counts = await chunkCounts();
        if (counts.active! > 0 || Object.values(counts).every((count) => count === 0)) break;
        await Bun.sleep(10);
      }

      const wallet = (await citizenStakers(checks.db))[0];
      const requests = pollApi(
        `http://127.0.0.1:${port}/v1/staking/citizens?address=${wallet}&limit=100`,
        token,
      );
      await Bun.sleep(500);

      // The standby, read directly: the new primary once promoted.
      const newPrimary = postgres(standby.server.url(harness.database.name), {
        max: 1,
        onnotice: () => {},
      });
      clients.push(newPrimary);
      /** The checkpoint row as last written: any write of the indexer's changes it. */
      const checkpointRow = async () => {
        const [row] = await newPrimary<{ written: string; block: string }[]>`
          select updated_at::text as written, indexed_block::text as block
          from indexer_checkpoints`;
        return row!;
      };

      const chunksAtStop = (await chunkCounts()).active!;
      const stoppedAt = performance.now();
      const stoppedWall = Date.now();
      await cluster.primary.stop("immediate");
      const downAt = performance.now();
      // Synchronous: the standby holds every commit the primary acknowledged; once its replay
      // stands still, what it shows is the last write before the stop. (Its receive position
      // may end inside a record the primary never finished, which is never replayed.)
      let replayed = "";
      for (;;) {
        const [row] = await newPrimary<{ lsn: string }[]>`
          select pg_last_wal_replay_lsn()::text as lsn`;
        if (row!.lsn === replayed) break;
        replayed = row!.lsn;
        await Bun.sleep(50);
      }
      const atStop = await checkpointRow();
      await standby.promote();
      const promotedAt = performance.now();
      let firstWriteAt: number | undefined;
      while (firstWriteAt === undefined) {
        if (performance.now() - stoppedAt > 4 * LOADED_MACHINE_MS) {
          throw new Error(`no write on the new primary; checkpoint still ${atStop.block}`);
        }
        if ((await checkpointRow()).written !== atStop.written) firstWriteAt = performance.now();
        else await Bun.sleep(10);
      }

      // Going on: more blocks, then everything up to the head, and the reindex done.
      await Bun.sleep(5 * BLOCK_MS);
      live.abort();
      await staking;
      await harness.waitForHead(2 * LOADED_MACHINE_MS);
      while (Object.values(await chunkCounts()).some((count) => count > 0)) await Bun.sleep(100);
      // The API is back too: beside two CPU hogs its first 200 came a moment after the indexer's
      // last write (its last polled answer was still a 503 once).
      const backBy = Date.now() + LOADED_MACHINE_MS;
      while (requests.answers.at(-1)?.status !== 200 && Date.now() < backBy) await Bun.sleep(50);
      await requests.stop();
      const head = await harness.waitForHead(LOADED_MACHINE_MS);

      // Nothing lost, nothing doubled: the tables equal the chain, by `verify` as an operator
      // runs it and by the staker's views for every wallet.
      const verify = await harness.cli(["verify"]);
      expect(verify.stdout).toContain(" 0 mismatches");
      expect(verify.code).toBe(0);
      expect(await harness.mismatches()).toEqual([]);
      const onChain = await devnet.client.getLogs({
        address: devnet.deployment.addresses.staker,
        events: STAKER_EVENTS,
        fromBlock: devnet.deployment.deployBlock,
        toBlock: head,
      });
      const [stored] = await newPrimary<{ n: number }[]>`
        select count(*)::int as n from staker_events`;
      expect(stored!.n).toBe(onChain.length);

      // The API answers from the new primary, equal to the chain at its indexed block.
      for (const each of await citizenStakers(checks.db)) {
        const response = await fetch(
          `http://127.0.0.1:${port}/v1/staking/citizens?address=${each}&limit=100`,
          { headers: { authorization: `Bearer ${token}` } },
        );
        expect(response.status).toBe(200);
        const block = BigInt(response.headers.get("x-indexed-block")!);
        expect(block).toBe(head);
        const { items } = (await response.json()) as { items: ApiRecord[] };
        expect(apiHolding(items)).toEqual(
          await chainHolding(
            harness.indexer.client,
            devnet.deployment.addresses.staker,
            each,
            block,
          ),
        );
      }

      // The follower wrote on the new primary after the promotion (the chunk jobs left at the
      // stop, if any were, are done: waited for above; a fast machine may have none left).
      const entries = (lines: string[]) =>
        lines
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as { msg: string; time: string })
          .map((entry) => ({ ...entry, at: Date.parse(entry.time) }));
      const promotedWall = Date.now() - (performance.now() - promotedAt);
      const loggedAfter = (command: ReturnType<typeof startCommand>, msg: string) =>
        entries(command.lines).filter((entry) => entry.msg === msg && entry.at > promotedWall)
          .length;
      const chunksAfter = (command: ReturnType<typeof startCommand>) =>
        loggedAfter(command, "chunk indexed");
      expect(loggedAfter(follow, "followed the head")).toBeGreaterThan(0);
      const backAt =
        requests.answers.findLast((answer) => answer.status !== 200)?.at ?? stoppedWall;
      expect(requests.answers.at(-1)?.status).toBe(200);
      const printed = running.flatMap((command) => command.lines);
      expect(printed.filter((line) => line.includes('"level":"error"'))).toEqual([]);

      console.log(
        `postgres promotion, from pg_ctl stop -m immediate: primary down at ${Math.round(downAt - stoppedAt)} ms, ` +
          `standby promoted (pg_ctl promote -w) at ${Math.round(promotedAt - stoppedAt)} ms, ` +
          `first write on the new primary at ${Math.round(firstWriteAt - stoppedAt)} ms ` +
          `(indexed block ${atStop.block} and ${chunksAtStop} chunk jobs running at the stop); chunks indexed after the promotion: worker ${chunksAfter(worker)}, follow ${chunksAfter(follow)}; ` +
          `API: ${requests.answers.length} requests, ${requests.answers.filter((a) => a.status !== 200).length} not 200, ` +
          `all 200 from ${Math.max(0, backAt - stoppedWall)} ms`,
      );

      expect(await worker.stop()).toBe(0);
      expect(await follow.stop()).toBe(0);
      expect(await api.stop()).toBe(0);
    } catch (error) {
      for (const command of running) console.error(command.lines.slice(-40).join("\n"));
      console.error(cluster.primary.lines().slice(-20).join("\n"));
      console.error(standby.server.lines().slice(-20).join("\n"));
      throw error;
    }
  },
  10 * LOADED_MACHINE_MS,
);
