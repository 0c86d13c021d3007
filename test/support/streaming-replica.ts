/**
 * A private Postgres primary and a hot standby streaming from it, made from Debian's binaries in
 * a temporary folder on ports the OS gives: what a deployment's read replica is, so a test can
 * pause its replay and resume it without touching the shared server. Stopped and removed by
 * `stop()`, and at process exit if a test dies before it.
 */
import { spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "../../devnet/anvil.ts";

const BIN = "/usr/lib/postgresql/15/bin";
/** initdb refuses root; the server then runs as Debian's postgres user. */
const AS_ROOT = userInfo().uid === 0;

export class ClusterFailed extends Error {
  override name = "ClusterFailed";
}

/** Runs one of Postgres's programs (as the postgres user when we are root) to its end. */
function run(program: string, args: string[]): void {
  const argv = [join(BIN, program), ...args];
  const result = AS_ROOT
    ? spawnSync("su", ["postgres", "-s", "/bin/sh", "-c", argv.map(quote).join(" ")], {
        encoding: "utf8",
      })
    : spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8" });
  if (result.status !== 0) {
    throw new ClusterFailed(
      `${program} exited ${result.status}: ${(result.stderr || result.stdout).trim()}`,
    );
  }
}

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

export interface Cluster {
  port: number;
  /** A URL of one of its databases. */
  url(database: string): string;
  /** A client of its `postgres` database. */
  sql: postgres.Sql;
}

export async function startStreamingReplica() {
  const root = mkdtempSync(join(tmpdir(), "cs-replica-"));
  if (AS_ROOT) chownSync(root, uidOf("postgres"), gidOf("postgres"));
  const folders = { primary: join(root, "primary"), standby: join(root, "standby") };
  const started: string[] = [];
  const clients: postgres.Sql[] = [];

  const stopNow = () => {
    // Immediate: the data is thrown away with the folder.
    for (const folder of started.splice(0).reverse()) {
      try {
        run("pg_ctl", ["-D", folder, "-m", "immediate", "-w", "stop"]);
      } catch {
        // Already stopped (a test stopped it on purpose, or it died).
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.once("exit", stopNow);

  const start = (folder: string) => {
    run("pg_ctl", ["-D", folder, "-l", `${folder}.log`, "-w", "-t", "60", "start"]);
    started.push(folder);
  };
  const cluster = (port: number): Cluster => {
    const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
    const sql = postgres(url("postgres"), { max: 1, onnotice: () => {} });
    clients.push(sql);
    return { port, url, sql };
  };

  try {
    const [primaryPort, standbyPort] = [await freePort(), await freePort()];
    run("initdb", [
      "-D",
      folders.primary,
      "-U",
      "postgres",
      "--auth=trust",
      "--no-sync",
      "-E",
      "UTF8",
      "--locale=C",
    ]);
    // Replication from 127.0.0.1 is trusted by initdb's pg_hba.conf already.
    await appendFile(
      join(folders.primary, "postgresql.conf"),
      [
        `port = ${primaryPort}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${root}'`,
        "wal_level = replica",
        "max_wal_senders = 4",
        "fsync = off",
        "shared_buffers = 32MB",
        // So a test can count the statements a request runs, on either server.
        "shared_preload_libraries = 'pg_stat_statements'",
        "",
      ].join("\n"),
    );
    start(folders.primary);
    // -R writes standby.signal and primary_conninfo: the copy starts as a streaming standby.
    run("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(primaryPort),
      "-U",
      "postgres",
      "-D",
      folders.standby,
      "-R",
      "-X",
      "stream",
      "-c",
      "fast",
    ]);
    await appendFile(join(folders.standby, "postgresql.conf"), `port = ${standbyPort}\n`);
    start(folders.standby);
    const primary = cluster(primaryPort);
    const standby = cluster(standbyPort);
    const [state] = await standby.sql<{ recovering: boolean }[]>`
      select pg_is_in_recovery() as recovering`;
    if (!state?.recovering) throw new ClusterFailed("the standby is not in recovery");

    return {
      primary,
      standby,
      /** Stops applying WAL on the standby (it still receives it); resolves once paused. */
      async pauseReplay() {
        await standby.sql`select pg_wal_replay_pause()`;
        for (;;) {
          const [row] = await standby.sql<{ state: string }[]>`
            select pg_get_wal_replay_pause_state() as state`;
          if (row?.state === "paused") return;
          await Bun.sleep(10);
        }
      },
      async resumeReplay() {
        await standby.sql`select pg_wal_replay_resume()`;
      },
      /** Resolves once the standby has replayed everything the primary had written when called. */
      async caughtUp(timeoutMs = 60_000) {
        const [row] = await primary.sql<{ lsn: string }[]>`select pg_current_wal_lsn() as lsn`;
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const [replayed] = await standby.sql<{ done: boolean }[]>`
            select pg_wal_lsn_diff(pg_last_wal_replay_lsn(), ${row!.lsn}::pg_lsn) >= 0 as done`;
          if (replayed?.done) return;
          if (Date.now() > deadline)
            throw new ClusterFailed(`the standby never replayed ${row!.lsn}`);
          await Bun.sleep(10);
        }
      },
      async stop() {
        await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 1 })));
        stopNow();
        process.off("exit", stopNow);
      },
    };
  } catch (error) {
    await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 1 })));
    stopNow();
    process.off("exit", stopNow);
    throw error;
  }
}

export type StreamingReplica = Awaited<ReturnType<typeof startStreamingReplica>>;

function uidOf(user: string): number {
  return Number(spawnSync("id", ["-u", user], { encoding: "utf8" }).stdout.trim());
}

function gidOf(user: string): number {
  return Number(spawnSync("id", ["-g", user], { encoding: "utf8" }).stdout.trim());
}
