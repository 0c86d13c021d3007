/**
 * The servers we start, as processes: a port already held is an error (even when the holder
 * shares ports with SO_REUSEPORT, as Elysia's default does), /readyz tells why it is not ready
 * when the node is away, the demo leaves no child behind when its API cannot bind, and demos run
 * side by side, each on its own node, API port, database and queue prefix.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { DEVNET_CHAIN_ID, demoKeptStates, freePort } from "../../devnet/anvil.ts";
import { scenarioBlocks } from "../../devnet/scenario.ts";
import { config } from "../../lib/config.ts";
import { openRedis } from "../../lib/redis.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runCommand, startCommand } from "../support/commands.ts";

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("servers");

beforeAll(async () => {
  database = await createScratchDatabase("servers");
});

afterAll(async () => {
  await database?.drop();
  await redis.clean();
});

/** A server holding a port the way a running instance of ours did: with SO_REUSEPORT. */
function holdPort() {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    reusePort: true,
    fetch: () => new Response("held"),
  });
}

const apiSettings = (port: number, overrides: Record<string, string | undefined> = {}) => ({
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  HOST: "127.0.0.1",
  PORT: String(port),
  RPC_URL: undefined,
  LOG_LEVEL: "info",
  ...overrides,
});

describe("the API process", () => {
  test("a port already held is one line naming PORT and a non-zero exit", async () => {
    const holder = holdPort();
    try {
      const result = await runCommand(["api/main.ts"], apiSettings(holder.port!), 15_000);
      expect(result.code).not.toBe(0);
      const errors = result.stderr.trim().split("\n");
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`PORT ${holder.port}`);
      expect(errors[0]).toContain("already in use");
      expect(await (await fetch(`http://127.0.0.1:${holder.port}/`)).text()).toBe("held");
    } finally {
      await holder.stop();
    }
  });

  test("with RPC_URL unreachable it starts, warns once, and /readyz is 503 saying why", async () => {
    const [port, closed] = await Promise.all([freePort(), freePort()]);
    const api = startCommand(
      ["api/main.ts"],
      apiSettings(port, { RPC_URL: `http://127.0.0.1:${closed}` }),
    );
    try {
      await api.waitForLine(/"msg":"listening"/);
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(response.status).toBe(503);
      const body = (await response.json()) as { ready: boolean; rpc: string; reasons: string[] };
      expect(body).toMatchObject({ ready: false, rpc: "unreachable" });
      expect(body.reasons.join("\n")).toContain("RPC_URL");
      expect(api.lines.filter((line) => line.includes("RPC_URL"))).toHaveLength(1);
    } finally {
      expect(await api.stop()).toBe(0);
    }
  });
});

/** Processes whose environment holds `entry` (NAME=value): what a command left running. */
function processesWith(entry: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environment = readFileSync(`/proc/${name}/environ`, "utf8").split("\0");
      if (environment.includes(entry)) found.push(Number(name));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** The command lines (argv) of the processes `parent` started. */
function childCommandLines(parent: number): string[][] {
  const found: string[][] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // "pid (comm) state ppid ...": the command name may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== parent) continue;
      found.push(readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").filter(Boolean));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/**
 * A demo with a small scenario needs well under a minute on an idle 2-core machine (anvil's start,
 * the deployment, the scenario and the catch-up); the bound allows for a machine loaded several
 * times over.
 */
const DEMO_START_MS = 240_000;
const DEMO_EVENTS = "40";

async function dropDatabase(url: string) {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = "/postgres";
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists "${name}" with (force)`);
  await sql.end();
}

async function deleteKeys(prefix: string) {
  const redis = openRedis(config.redis, "queues");
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
}

describe("the demo", () => {
  test(
    "when its API cannot bind, it stops and leaves no child running",
    async () => {
      const holder = holdPort();
      // Under the scratch prefix, so the suite's clean-up removes the demo's keys too.
      const prefix = `${redis.prefix}:demo`;
      const devnetFile = join(tmpdir(), `cs-demo-${process.pid}.json`);
      const demoDatabase = new URL(config.databaseUrl);
      demoDatabase.pathname = `/cs_demo_${process.pid}_${Date.now().toString(36)}`;
      try {
        const result = await runCommand(
          ["scripts/demo.ts", "--events", DEMO_EVENTS, "--node-port", String(await freePort())],
          {
            PORT: String(holder.port),
            DEMO_DATABASE_URL: demoDatabase.toString(),
            DEMO_QUEUE_PREFIX: prefix,
            DEVNET_FILE: devnetFile,
            LOG_LEVEL: "warn",
          },
          DEMO_START_MS,
        );
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`PORT ${holder.port}`);
        expect(result.stderr).toContain("demo: stopping: the API exited");
        // The demo, anvil, the indexer and the API all carry the demo's settings.
        expect(processesWith(`DEMO_QUEUE_PREFIX=${prefix}`)).toEqual([]);
      } finally {
        await holder.stop();
        rmSync(devnetFile, { force: true });
        await dropDatabase(demoDatabase.toString());
      }
    },
    DEMO_START_MS + 30_000,
  );

  test(
    "two demos started together beside a node and an API already running both serve",
    async () => {
      // What a first demo holds: a node answering as a devnet does, and an API port.
      const node = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        fetch: () =>
          Response.json({ jsonrpc: "2.0", id: 1, result: `0x${DEVNET_CHAIN_ID.toString(16)}` }),
      });
      const api = holdPort();
      const devnetFile = join(tmpdir(), `cs-demos-${process.pid}.json`);
      const demos = [0, 1].map(() =>
        startCommand(
          [
            "scripts/demo.ts",
            "--events",
            DEMO_EVENTS,
            "--node-port",
            String(node.port),
            "--api-port",
            String(api.port),
          ],
          {
            PORT: undefined,
            DEMO_DATABASE_URL: undefined,
            DEMO_QUEUE_PREFIX: undefined,
            DEVNET_FILE: devnetFile,
            LOG_LEVEL: "warn",
          },
        ),
      );
      const settings: { databaseUrl: string; queuePrefix: string }[] = [];
      try {
        const printed = await Promise.all(
          demos.map(async (demo) => {
            const curl = await demo.waitForLine(/curl -s -H/, DEMO_START_MS);
            const status = await demo.waitForLine(/DATABASE_URL=\S+ QUEUE_PREFIX=\S+/, 1_000);
            const [, databaseUrl, queuePrefix] =
              /DATABASE_URL=(\S+) QUEUE_PREFIX=(\S+)/.exec(status) ?? [];
            settings.push({ databaseUrl: databaseUrl!, queuePrefix: queuePrefix! });
            const [, token, url] = /Bearer (\S+)' '(\S+)'/.exec(curl) ?? [];
            return {
              token: token!,
              url: url!,
              databaseUrl: databaseUrl!,
              queuePrefix: queuePrefix!,
            };
          }),
        );
        for (const demo of printed) {
          const response = await fetch(demo.url, {
            headers: { authorization: `Bearer ${demo.token}` },
          });
          expect(response.status).toBe(200);
          expect(new URL(demo.url).port).not.toBe(String(api.port));
        }
        expect(new Set(printed.map((demo) => new URL(demo.url).port)).size).toBe(2);
        expect(new Set(printed.map((demo) => demo.databaseUrl)).size).toBe(2);
        expect(new Set(printed.map((demo) => demo.queuePrefix)).size).toBe(2);
        for (const demo of demos) {
          expect(demo.lines.join("\n")).toContain(`node port ${node.port} is taken; anvil took`);
        }
        // Each demo's node keeps only the states its indexer reads, so it stays small for days.
        const kept = String(demoKeptStates(scenarioBlocks(Number(DEMO_EVENTS)).blocks));
        for (const demo of demos) {
          const anvil = childCommandLines(demo.child.pid).find((argv) =>
            argv[0]?.endsWith("/anvil"),
          );
          const setting = (flag: string) => anvil?.[anvil.indexOf(flag) + 1];
          expect([setting("--prune-history"), setting("--transaction-block-keeper")]).toEqual([
            kept,
            kept,
          ]);
        }
      } finally {
        const codes = await Promise.all(demos.map((demo) => demo.stop()));
        await node.stop(true);
        await api.stop(true);
        rmSync(devnetFile, { force: true });
        for (const { databaseUrl, queuePrefix } of settings) {
          await dropDatabase(databaseUrl);
          await deleteKeys(queuePrefix);
        }
        expect(codes).toEqual([0, 0]);
      }
    },
    DEMO_START_MS + 30_000,
  );
});
