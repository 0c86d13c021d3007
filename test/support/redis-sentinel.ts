/**
 * A private Redis fleet for failover tests: a primary, one replica and three sentinels (Debian's
 * redis-sentinel, or redis-server --sentinel), each its own process on a free loopback port, in a
 * temporary directory. The sentinels are told to act within seconds. `stop()` kills every process
 * and removes the directory; the shared Redis is never touched.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../../devnet/anvil.ts";
import { openRedisOnce, type RedisTarget } from "../../lib/redis.ts";

/** The master group name the sentinels monitor. */
export const MASTER_NAME = "cs-failover";
/**
 * How long a primary stays silent before a sentinel thinks it down (Debian's default: 30 s).
 * Sentinel promotes no replica whose link to the primary has been down for more than ten times
 * this (plus the time since the primary went down): the failover test cuts replication a few
 * steps before it kills the primary, and on a loaded machine those steps took 10 s once, so at
 * 1 s every promotion was refused for 83 s (`-failover-abort-no-good-slave`).
 */
export const DOWN_AFTER_MS = 3_000;
/** The user the replica replicates as: turning it off cuts replication and nothing else. */
const REPLICATION_USER = { name: "replication", password: "replication-password" };
/** The servers' password (REDIS_URL's) and the sentinels' own (REDIS_SENTINEL_PASSWORD). */
export const PASSWORDS = { server: "serverPass3b7d1f", sentinel: "sentinelPass7c1e5b" };

export interface RedisNode {
  port: number;
  process: Subprocess;
}

export async function startRedisFleet() {
  const dir = mkdtempSync(join(tmpdir(), "cs-sentinel-"));
  const processes: Subprocess[] = [];
  const stop = async () => {
    for (const each of processes) each.kill("SIGKILL");
    await Promise.all(processes.map((each) => each.exited));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const spawn = (argv: string[]): Subprocess => {
      const child = Bun.spawn(argv, { cwd: dir, stdout: "ignore", stderr: "ignore" });
      processes.push(child);
      return child;
    };
    const server = async (name: string, extra: string[]): Promise<RedisNode> => {
      const port = await freePort();
      const argv = ["redis-server", "--port", String(port), "--bind", "127.0.0.1"].concat(
        ["--dir", dir, "--dbfilename", `${name}.rdb`, "--logfile", join(dir, `${name}.log`)],
        ["--save", "", "--appendonly", "no", "--daemonize", "no"],
        extra,
      );
      const node = { port, process: spawn(argv) };
      await untilAnswers(port);
      return node;
    };

    const primary = await server("primary", [
      "--requirepass",
      PASSWORDS.server,
      "--user",
      REPLICATION_USER.name,
      "on",
      `>${REPLICATION_USER.password}`,
      "+psync",
      "+replconf",
      "+ping",
    ]);
    const replica = await server("replica", [
      "--requirepass",
      PASSWORDS.server,
      "--replicaof",
      "127.0.0.1",
      String(primary.port),
      "--masteruser",
      REPLICATION_USER.name,
      "--masterauth",
      REPLICATION_USER.password,
    ]);
    await untilInfo(replica.port, "replication", /master_link_status:up/);

    const sentinels: RedisNode[] = [];
    for (let index = 0; index < 3; index++) {
      const port = await freePort();
      const file = join(dir, `sentinel-${index}.conf`);
      // Sentinel rewrites its file (what it learns), so each gets its own.
      writeFileSync(
        file,
        [
          `port ${port}`,
          "bind 127.0.0.1",
          `dir ${dir}`,
          `logfile ${join(dir, `sentinel-${index}.log`)}`,
          `requirepass ${PASSWORDS.sentinel}`,
          `sentinel sentinel-pass ${PASSWORDS.sentinel}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
          `sentinel auth-pass ${MASTER_NAME} ${PASSWORDS.server}`,
          `sentinel down-after-milliseconds ${MASTER_NAME} ${DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${MASTER_NAME} 10000`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          "",
        ].join("\n"),
      );
      const argv = Bun.which("redis-sentinel")
        ? ["redis-sentinel", file]
        : ["redis-server", file, "--sentinel"];
      sentinels.push({ port, process: spawn(argv) });
      sentinelPorts.add(port);
    }
    // Failover needs each sentinel to know the replica and the two others (hello messages).
    for (const sentinel of sentinels) {
      await untilAnswers(sentinel.port);
      // What it last said goes into the timeout's message: a sentinel that never saw its peers
      // (once, two copies of this file beside a third Redis test) and one on a port another
      // process took look alike otherwise.
      let seen = "nothing yet";
      await until(
        () => `sentinel ${sentinel.port} sees the replica and two sentinels (it said: ${seen})`,
        async () => {
          const asked = (args: string[]) =>
            command(sentinel.port, args).catch((error: Error) => {
              seen = `an error: ${error.message}`;
              throw error;
            });
          const known = await asked(["SENTINEL", "REPLICAS", MASTER_NAME]);
          const peers = await asked(["SENTINEL", "SENTINELS", MASTER_NAME]);
          const count = Array.isArray(peers) ? peers.length : "none";
          seen = `replicas ${JSON.stringify(known)}, ${count} other sentinels`;
          return JSON.stringify(known).includes(String(replica.port)) && count === 2;
        },
      );
    }

    const hosts = sentinels.map((each) => `127.0.0.1:${each.port}`).join(",");
    const target: RedisTarget = {
      url: `redis://:${PASSWORDS.server}@unused.invalid`,
      sentinel: {
        hosts: sentinels.map((each) => ({ host: "127.0.0.1", port: each.port })),
        name: MASTER_NAME,
        password: PASSWORDS.sentinel,
      },
    };
    return {
      dir,
      primary,
      replica,
      sentinels,
      /** Redis through the sentinels, as lib/config.ts gives it from `env`. */
      target,
      /**
       * The settings a process needs to reach Redis through the sentinels. REDIS_URL's host is
       * not used then: one that does not resolve proves it.
       */
      env: {
        REDIS_SENTINELS: hosts,
        REDIS_SENTINEL_NAME: MASTER_NAME,
        REDIS_SENTINEL_PASSWORD: PASSWORDS.sentinel,
        REDIS_URL: target.url,
      },
      /** The port the sentinels now name primary. */
      async primaryPort(): Promise<number> {
        const address = await command(sentinels[0]!.port, [
          "SENTINEL",
          "GET-MASTER-ADDR-BY-NAME",
          MASTER_NAME,
        ]);
        return Number((address as string[])[1]);
      },
      /**
       * Cuts replication: the replica can no longer log in and its link is dropped, so what the
       * primary acknowledges from now on exists on the primary alone (replication is
       * asynchronous: this is a replica lagging when its primary dies).
       */
      async cutReplication() {
        await command(primary.port, ["ACL", "SETUSER", REPLICATION_USER.name, "off"]);
        await command(primary.port, ["CLIENT", "KILL", "USER", REPLICATION_USER.name]);
        await untilInfo(replica.port, "replication", /master_link_status:down/);
      },
      /** A one-off command to one server of the fleet. */
      command,
      /** The servers' and sentinels' own logs, for a failure's report. */
      logs: () =>
        ["primary", "replica", "sentinel-0", "sentinel-1", "sentinel-2"]
          .map((name) => {
            try {
              return `--- ${name}\n${readFileSync(join(dir, `${name}.log`), "utf8")}`;
            } catch {
              return `--- ${name}: no log`;
            }
          })
          .join("\n"),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export type RedisFleet = Awaited<ReturnType<typeof startRedisFleet>>;

const sentinelPorts = new Set<number>();

/** Sends one command to the server or sentinel on `port` (each has its password) and returns its reply. */
async function command(port: number, args: string[]): Promise<unknown> {
  const password = sentinelPorts.has(port) ? PASSWORDS.sentinel : PASSWORDS.server;
  const redis = openRedisOnce({ url: `redis://:${password}@127.0.0.1:${port}` }, 2_000);
  redis.on("error", () => {});
  try {
    await redis.connect();
    return await redis.call(args[0]!, ...args.slice(1));
  } finally {
    redis.disconnect();
  }
}

async function untilAnswers(port: number) {
  await until(`Redis on ${port} answers`, async () => (await command(port, ["PING"])) === "PONG");
}

async function untilInfo(port: number, section: string, pattern: RegExp) {
  await until(`${section} on ${port} matches ${pattern}`, async () =>
    pattern.test(String(await command(port, ["INFO", section]))),
  );
}

async function until(
  what: string | (() => string),
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting until ${typeof what === "string" ? what : what()}`);
    }
    await Bun.sleep(50);
  }
}
