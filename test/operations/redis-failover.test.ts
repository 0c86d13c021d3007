/**
 * Redis fails over under a running backfill. A private primary, a replica and three sentinels
 * (test/support/redis-sentinel.ts); a `worker`, a `backfill` and the API reach Redis only through
 * the sentinels (REDIS_SENTINELS). Replication is cut first and more blocks are queued, so the
 * primary holds jobs its replica never got (replication is asynchronous); then the primary is
 * killed with SIGKILL. The sentinels promote the replica, every process follows, the lost jobs
 * are found from Postgres (the checkpoint's scheduled block) and queued again, and the tables end
 * equal to the chain. The API answers throughout. The failover's times are measured and printed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createDatabase } from "../../db/client.ts";
import { freePort } from "../../devnet/anvil.ts";
import { createQueues, enqueueRange } from "../../indexer/queues/queues.ts";
import { createIndexerStore } from "../../indexer/store/index.ts";
import { checkRedis } from "../../lib/connection-checks.ts";
import { Unreachable } from "../../lib/fail.ts";
import { SETTLE_MS } from "../../lib/outages.ts";
import { openRedis, type RedisSentinel, type RedisTarget } from "../../lib/redis.ts";
import { citizenStakers } from "../../ops/verify.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { openStream } from "../api/stream-client.ts";
import { pollApi } from "../support/api-poller.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import {
  DOWN_AFTER_MS,
  PASSWORDS,
  type RedisFleet,
  startRedisFleet,
} from "../support/redis-sentinel.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

const PREFIX = "cs-failover";
const SECRET = "sentinelSecret4d9e2a";

let fleet: RedisFleet;
let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let checks: ReturnType<typeof createDatabase>;
const running: ReturnType<typeof startCommand>[] = [];

beforeAll(async () => {
  [fleet, devnet, database] = await Promise.all([
    startRedisFleet(),
    // Read, never added to (empty blocks aside): the cached chain, not a fresh replay.
    startScenarioChain({ events: 150, seed: "redis-failover" }),
    createScratchDatabase("failover"),
  ]);
  // Empty blocks make many small chunks: the backfill is still running when the primary dies.
  await devnet.client.mine({ blocks: 300 });
  checks = createDatabase(database.url, { max: 2 });
});

afterAll(async () => {
  for (const command of running) {
    command.child.kill("SIGCONT"); // the worker may be held still by a failed test
    await command.stop().catch(() => {});
  }
  await checks?.close();
  await fleet?.stop();
  await devnet?.stop();
  await database?.drop();
});

const settings = (extra: Record<string, string> = {}) => ({
  RPC_URL: devnet.node.rpcUrl,
  STAKER_ADDRESS: devnet.deployment.addresses.staker,
  DATABASE_URL: database.url,
  QUEUE_PREFIX: PREFIX,
  CHUNK_SIZE: "2",
  CONCURRENCY: "2",
  FINALITY_DEPTH: "0",
  // A chunk that finished on the old primary after the last replicated write is active, locked
  // and unowned on the new one: it runs again once its lock lapses. Short here, 30 s by default.
  JOB_LOCK_MS: "3000",
  // Paces the chunks so the backfill is mid-way when the primary dies.
  RPC_MAX_REQUESTS_PER_SECOND: "60",
  LOG_LEVEL: "info",
  ...fleet.env,
  ...extra,
});

const start = (args: string[], extra: Record<string, string> = {}) => {
  const command = startCommand(args, settings(extra));
  running.push(command);
  return command;
};

const indexedBlock = async () =>
  (await createIndexerStore(checks.db).checkpoint())?.indexedBlock ?? -1n;

/** Chunk jobs under the prefix on one server, by the first block of their range. */
async function chunkJobsFrom(port: number, firstBlock: bigint): Promise<string[]> {
  const keys = (await fleet.command(port, ["KEYS", `${PREFIX}:chunks:index-*`])) as string[];
  return keys
    .map((key) => /:chunks:(index-(\d+)-\d+)$/.exec(key))
    .filter((match) => match !== null && BigInt(match[2]!) >= firstBlock)
    .map((match) => match![1]!);
}

test("the Sentinel settings: a wrong master name or password, or a bad list, is named in one line", async () => {
  const through = (change: Partial<RedisSentinel>): RedisTarget => ({
    ...fleet.target,
    sentinel: { ...fleet.target.sentinel!, ...change },
  });
  await expect(checkRedis(fleet.target)).resolves.toBeUndefined();
  await expect(checkRedis(through({ name: "no-such-master" }))).rejects.toThrow(
    /^REDIS_SENTINELS .*no master of that name \(REDIS_SENTINEL_NAME\)/,
  );
  const closed = through({ hosts: [{ host: "127.0.0.1", port: await freePort() }] });
  await expect(checkRedis(closed)).rejects.toThrow(Unreachable);
  await expect(checkRedis(closed)).rejects.toThrow(/^REDIS_SENTINELS .*sentinels are unreachable/);

  // A wrong password for the sentinels is refused, and never printed.
  const status = await runCommand(
    ["scripts/cli.ts", "status"],
    settings({ REDIS_SENTINEL_PASSWORD: SECRET, LOG_LEVEL: "warn" }),
  );
  expect(status.code).toBe(2);
  expect(status.stderr).toContain("REDIS_SENTINEL_PASSWORD");
  expect(status.stdout + status.stderr).not.toContain(SECRET);

  const none = { REDIS_SENTINELS: "", REDIS_SENTINEL_NAME: "", REDIS_SENTINEL_PASSWORD: "" };
  const refused: [string, Record<string, string>][] = [
    ["REDIS_SENTINELS", { REDIS_SENTINELS: "127.0.0.1:26379,host:port" }],
    ["REDIS_SENTINEL_NAME", { ...none, REDIS_SENTINEL_NAME: "mymaster" }],
    ["REDIS_SENTINEL_PASSWORD", { ...none, REDIS_SENTINEL_PASSWORD: SECRET }],
    ["REDIS_URL", { REDIS_URL: "rediss://127.0.0.1" }],
  ];
  const results = await Promise.all(
    refused.map(([, change]) => runCommand(["lib/config.ts"], settings(change))),
  );
  results.forEach((result, index) => {
    expect({ code: result.code, lines: result.stderr.trim().split("\n").length }).toEqual({
      code: 2,
      lines: 1,
    });
    expect(result.stderr).toContain(refused[index]![0]);
    expect(result.stderr).not.toContain(SECRET);
  });
});

test(
  "the primary killed mid-backfill: the replica is promoted, indexing goes on, nothing is lost",
  async () => {
    try {
      expect((await runCommand(["scripts/cli.ts", "migrate"], settings())).code).toBe(0);
      const created = await runCommand(
        ["scripts/cli.ts", "token", "create", "--label", "failover"],
        settings(),
      );
      const token = created.stdout.trim().split("\n").at(-1)!;
      const port = await freePort();
      const api = start(["api/main.ts"], { PORT: String(port) });
      const worker = start(["scripts/cli.ts", "worker"]);
      await Promise.all([
        api.waitForLine(/"msg":"listening"/),
        worker.waitForLine(/worker taking chunk jobs/),
      ]);

      const first = devnet.deployment.deployBlock;
      const head = await devnet.client.getBlockNumber();
      const backfill = start(["scripts/cli.ts", "backfill", "--to", String(head)]);
      const third = first + (head - first) / 3n;
      while ((await indexedBlock()) < third) {
        if (backfill.child.exitCode !== null) throw new Error("the backfill ended early");
        await Bun.sleep(50);
      }
      // Held still until the kill, so the kill lands mid-backfill however fast the worker is
      // beside other test files.
      worker.child.kill("SIGSTOP");

      const wallet = (await citizenStakers(checks.db))[0];
      const requests = pollApi(
        `http://127.0.0.1:${port}/v1/staking/citizens?address=${wallet}&limit=100`,
        token,
      );

      // More blocks, queued while the replica is cut off: jobs only the primary will have held.
      // Queued in process, as `backfill --enqueue-only` queues them, because Sentinel refuses to
      // promote a replica cut off for longer than ten times down-after-milliseconds, and a CLI
      // process starting on a loaded machine can take that long.
      await devnet.client.mine({ blocks: 20 });
      const newHead = await devnet.client.getBlockNumber();
      const connection = openRedis(fleet.target, "queues");
      const queues = createQueues(connection, PREFIX);
      await fleet.cutReplication();
      await enqueueRange(queues.chunks, (await indexedBlock()) + 1n, newHead, 2);
      await createIndexerStore(checks.db).raiseScheduled(newHead);
      await queues.close();
      connection.disconnect();
      const onPrimary = await chunkJobsFrom(fleet.primary.port, head + 1n);
      expect(onPrimary.length).toBeGreaterThan(0);
      expect(await chunkJobsFrom(fleet.replica.port, head + 1n)).toEqual([]);

      const killedAt = Date.now();
      const indexedAtKill = await indexedBlock();
      fleet.primary.process.kill("SIGKILL");
      worker.child.kill("SIGCONT");
      expect(indexedAtKill).toBeLessThan(head);

      while ((await fleet.primaryPort().catch(() => 0)) !== fleet.replica.port) {
        await Bun.sleep(20);
      }
      const promotedAt = Date.now();

      const deadline = Date.now() + 4 * LOADED_MACHINE_MS;
      while ((await indexedBlock()) < newHead) {
        if (Date.now() > deadline) throw new Error(`indexing stalled at ${await indexedBlock()}`);
        await Bun.sleep(100);
      }
      const doneAt = Date.now();
      expect(await backfill.child.exited).toBe(0);
      await requests.stop();

      // The jobs lost with the primary were found from Postgres and queued again.
      const logs = [...worker.lines, ...backfill.lines];
      expect(logs.some((line) => line.includes("re-queueing a range"))).toBe(true);
      const verify = await runCommand(["scripts/cli.ts", "verify"], settings());
      expect({ code: verify.code, output: verify.stdout }).toMatchObject({ code: 0 });

      // The API answered throughout, and its Redis connection followed the failover: its rate
      // counts and a new stream's lease land on the promoted replica.
      expect(requests.answers.filter((answer) => answer.status !== 200)).toEqual([]);
      const keysOnReplica = async (pattern: string) =>
        (await fleet.command(fleet.replica.port, ["KEYS", `${PREFIX}:${pattern}`])) as string[];
      expect(await keysOnReplica("api:rate:*")).not.toEqual([]);
      const stream = await openStream(
        `http://127.0.0.1:${port}/v1/staking/citizens/stream?address=${wallet}`,
        { authorization: `Bearer ${token}` },
      );
      try {
        expect(stream.status).toBe(200);
        expect(await keysOnReplica("api:streams:*")).not.toEqual([]);
      } finally {
        stream.close();
      }
      expect((await runCommand(["scripts/cli.ts", "status"], settings())).code).toBe(0);

      const entries = (lines: string[]) =>
        lines
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as { msg: string; time: string; ms?: number })
          .map((entry) => ({ ...entry, at: Date.parse(entry.time) }));

      // A warning when Redis went away and a line when it came back; no error. The failover's
      // later blips (a connection asking the sentinels again) are no new warning within
      // SETTLE_MS of the end; on a loaded machine one may come later, and is then an outage of
      // its own, warned of and ended in turn.
      const outages = () =>
        entries(worker.lines)
          .filter((entry) => entry.msg.startsWith("REDIS_SENTINELS "))
          .map((entry) => ({ back: entry.msg.endsWith("reachable again"), at: entry.at }));
      // Such a later outage may still be under way here: its end comes once Redis answers.
      const ended = Date.now() + LOADED_MACHINE_MS;
      while (outages().at(-1)?.back === false && Date.now() < ended) await Bun.sleep(100);
      const outageLines = outages();
      expect(outageLines.length).toBeGreaterThanOrEqual(2);
      expect(outageLines.at(-1)!.back).toBe(true);
      outageLines.forEach((line, index) => {
        expect({ index, back: line.back }).toEqual({ index, back: index % 2 === 1 });
        if (index >= 2 && !line.back)
          expect(line.at - outageLines[index - 1]!.at).toBeGreaterThanOrEqual(SETTLE_MS);
      });
      const printed = running.flatMap((command) => command.lines);
      expect(printed.filter((line) => line.includes('"level":"error"'))).toEqual([]);

      // When each process had Redis back (its connection's ready event), and when the first
      // chunk begun after that was done.
      const reconnectedAt = [worker, backfill].map(
        (command) =>
          entries(command.lines).find((entry) => entry.msg === "REDIS_SENTINELS reachable again")!
            .at,
      );
      const backAt = Math.max(...reconnectedAt);
      const firstChunkAt = Math.min(
        ...entries(logs)
          .filter((entry) => entry.msg === "chunk indexed" && entry.at - entry.ms! >= backAt)
          .map((entry) => entry.at),
      );
      const slowest = Math.max(...requests.answers.map((answer) => answer.ms));
      console.log(
        `redis failover (down-after ${DOWN_AFTER_MS} ms), from the kill: replica promoted at ${promotedAt - killedAt} ms, ` +
          `worker and backfill reconnected at ${reconnectedAt.map((at) => at - killedAt).join(" and ")} ms, ` +
          `first chunk after that done at ${firstChunkAt - killedAt} ms, all indexed at ${doneAt - killedAt} ms; ` +
          `${onPrimary.length} chunk jobs lost with the primary were queued again; ` +
          `API: ${requests.answers.length} requests, all 200, slowest ${Math.round(slowest)} ms`,
      );
      expect(backAt - killedAt).toBeLessThan(DOWN_AFTER_MS + LOADED_MACHINE_MS);
      const text = [...printed, verify.stdout, verify.stderr].join("\n");
      expect(Object.values(PASSWORDS).filter((secret) => text.includes(secret))).toEqual([]);

      expect(await worker.stop()).toBe(0);
      expect(await api.stop()).toBe(0);
    } catch (error) {
      console.error(fleet.logs());
      for (const command of running) console.error(command.lines.slice(-40).join("\n"));
      throw error;
    }
  },
  10 * LOADED_MACHINE_MS,
);
