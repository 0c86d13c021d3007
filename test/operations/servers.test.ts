/**
 * The servers we start, as processes: a port already held is an error (even when the holder
 * shares ports with SO_REUSEPORT, as Elysia's default does), /readyz tells why it is not ready
 * when the node is away, and the demo leaves no child behind when its API cannot bind.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
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

describe("the demo", () => {
  test("when its API cannot bind, it stops and leaves no child running", async () => {
    const holder = holdPort();
    // Under the scratch prefix, so the suite's clean-up removes the demo's keys too.
    const prefix = `${redis.prefix}:demo`;
    const devnetFile = join(tmpdir(), `cs-demo-${process.pid}.json`);
    const demoDatabase = new URL(config.databaseUrl);
    demoDatabase.pathname = `/cs_demo_${process.pid}_${Date.now().toString(36)}`;
    try {
      const result = await runCommand(
        ["scripts/demo.ts"],
        {
          PORT: String(holder.port),
          DEMO_DATABASE_URL: demoDatabase.toString(),
          DEMO_QUEUE_PREFIX: prefix,
          DEVNET_FILE: devnetFile,
          LOG_LEVEL: "warn",
        },
        60_000,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`PORT ${holder.port}`);
      expect(result.stderr).toContain("demo: stopping: the API exited");
      // The demo, anvil, the indexer and the API all carry the demo's settings.
      expect(processesWith(`DEMO_QUEUE_PREFIX=${prefix}`)).toEqual([]);
    } finally {
      await holder.stop();
      rmSync(devnetFile, { force: true });
      const admin = new URL(config.databaseUrl);
      admin.pathname = "/postgres";
      const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
      await sql.unsafe(`drop database if exists "${demoDatabase.pathname.slice(1)}" with (force)`);
      await sql.end();
    }
  }, 90_000);
});
