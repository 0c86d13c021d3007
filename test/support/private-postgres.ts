/**
 * A Postgres primary of a test's own, from Debian's binaries (initdb) in a temporary folder on a
 * port of its own, and on demand a hot standby streaming from it (`pg_basebackup -R`): what a
 * deployment's read replica, or the server a failover promotes, is. The shared server listens on
 * 127.0.0.1 only and its settings are not ours to change; here a test can pause replay, stop the
 * primary and promote the standby. Trust authentication, no fsync: scratch servers, removed with
 * their data by `stop()`, and at process exit if a test dies before it.
 */
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { runMigrations } from "../../db/migrate.ts";
import { freePort } from "../../devnet/anvil.ts";
import { runProcess, startProcess } from "./commands.ts";
import { LOADED_MACHINE_MS } from "./time.ts";

const BIN = "/usr/lib/postgresql/15/bin";

export class ClusterFailed extends Error {
  override name = "ClusterFailed";
}

/** initdb refuses root: as root, Debian's postgres user runs everything. */
const AS_ROOT = userInfo().uid === 0;
const postgresId = (flag: "-u" | "-g") =>
  Number(Bun.spawnSync(["id", flag, "postgres"]).stdout.toString().trim());

function asPostgres(argv: string[]): string[] {
  if (!AS_ROOT) return argv;
  // setpriv execs: the child is the program itself, so a signal to it reaches the server.
  const ids = [`--reuid=${postgresId("-u")}`, `--regid=${postgresId("-g")}`];
  return ["setpriv", ...ids, "--clear-groups", "--", ...argv];
}

/** Runs one of Postgres's programs to its end; a non-zero exit is a ClusterFailed. */
async function run(program: string, args: string[], cwd: string): Promise<void> {
  const result = await runProcess(
    asPostgres([join(BIN, program), ...args]),
    { cwd, env: { ...process.env, LC_ALL: "C.UTF-8" } },
    2 * LOADED_MACHINE_MS,
  );
  if (result.code !== 0) {
    throw new ClusterFailed(
      `${program} exited ${result.code}: ${(result.stderr || result.stdout).trim()}`,
    );
  }
}

export interface PrivateServer {
  port: number;
  /** The URL of `database` reached at `host`, one of the addresses the server listens on. */
  url(database?: string, host?: string): string;
  /** A client of its `postgres` database. */
  sql: postgres.Sql;
  /** What the server has logged. */
  lines(): string[];
  /** `pg_ctl stop` in the given mode; immediate is a crash (no checkpoint, sessions cut). */
  stop(mode?: "fast" | "immediate"): Promise<void>;
}

export interface PrivatePostgresOptions {
  /** Addresses besides 127.0.0.1 to listen on (a test hosts' bridge). */
  listen?: string[];
}

export async function startPrivatePostgres(options: PrivatePostgresOptions = {}) {
  const root = mkdtempSync(join(tmpdir(), "cs-postgres-"));
  if (AS_ROOT) chownSync(root, postgresId("-u"), postgresId("-g"));
  /** The server processes, and the servers in start order (the primary first). */
  const processes: ReturnType<typeof startProcess>[] = [];
  const started: PrivateServer[] = [];
  const clients: postgres.Sql[] = [];
  const listen = ["127.0.0.1", ...(options.listen ?? [])];

  const removeNow = () => {
    // SIGQUIT is an immediate shutdown: the data goes with the folder anyway.
    for (const { child } of processes) if (child.exitCode === null) child.kill("SIGQUIT");
    rmSync(root, { recursive: true, force: true });
  };
  process.once("exit", removeNow);

  /** Starts the server of `folder` on a port of its own and waits until it takes connections. */
  const serve = async (folder: string, ready: RegExp): Promise<PrivateServer> => {
    const port = await freePort();
    const server = startProcess(
      asPostgres([
        join(BIN, "postgres"),
        ...["-D", folder, "-p", String(port), "-k", root],
        ...["-c", `listen_addresses=${listen.join(",")}`],
        ...["-c", "fsync=off", "-c", "full_page_writes=off", "-c", "shared_buffers=32MB"],
        ...["-c", "max_connections=200"],
        // So a test can count the statements a request runs, on either server.
        ...["-c", "shared_preload_libraries=pg_stat_statements"],
      ]),
      { cwd: root, env: { ...process.env, LC_ALL: "C.UTF-8" } },
    );
    processes.push(server);
    await server.waitForLine(ready, 2 * LOADED_MACHINE_MS);
    const url = (database = "postgres", host = "127.0.0.1") =>
      `postgres://postgres@${host}:${port}/${database}`;
    const sql = postgres(url(), { max: 1, onnotice: () => {} });
    clients.push(sql);
    const served: PrivateServer = {
      port,
      url,
      sql,
      lines: () => server.lines,
      async stop(mode = "fast") {
        if (server.child.exitCode !== null) return;
        await run("pg_ctl", ["-D", folder, "-m", mode, "-w", "stop"], root);
        await server.child.exited;
      },
    };
    started.push(served);
    return served;
  };

  const stop = async () => {
    await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 1 })));
    removeNow();
    await Promise.all(processes.map(({ child }) => child.exited));
    // A server still shutting down wrote on after the first removal (a standby's folder, its
    // WAL): each run left 80 MB and more in the temporary folder. Gone now that none runs.
    rmSync(root, { recursive: true, force: true });
    process.off("exit", removeNow);
  };

  try {
    const primaryFolder = join(root, "primary");
    await run(
      "initdb",
      ["-D", primaryFolder, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"],
      root,
    );
    // Any address on the server's own networks (the test hosts' bridge) may connect and
    // replicate; 127.0.0.1 may already (initdb's pg_hba.conf).
    await appendFile(
      join(primaryFolder, "pg_hba.conf"),
      "host all all samenet trust\nhost replication all samenet trust\n",
    );
    const primary = await serve(primaryFolder, /database system is ready to accept connections/);

    return {
      primary,
      /** The URL of every server started, the primary first, for `attrs` (a failover URL). */
      hostsUrl(database: string, attrs: "primary" | "read-write" | "any" = "primary") {
        const hosts = started.map(({ port }) => `127.0.0.1:${port}`).join(",");
        return `postgres://postgres@${hosts}/${database}?target_session_attrs=${attrs}`;
      },
      /** A fresh, migrated database on the primary. */
      async createDatabase(name: string) {
        await primary.sql.unsafe(`create database "${name}"`);
        await runMigrations(primary.url(name));
        return {
          name,
          url: primary.url(name),
          /** The server goes with its databases. */
          drop: async () => {},
        };
      },
      /**
       * A hot standby streaming from the primary. `synchronous`: every commit on the primary
       * waits until the standby has it, so a promotion loses nothing acknowledged.
       */
      async addStandby({ synchronous = false } = {}) {
        const folder = join(root, `standby-${started.length}`);
        // -R writes standby.signal and primary_conninfo: the copy starts as a streaming standby.
        await run(
          "pg_basebackup",
          [
            ...["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres"],
            ...["-D", folder, "-R", "-X", "stream", "-c", "fast"],
          ],
          root,
        );
        const standby = await serve(folder, /ready to accept read.only connections/);
        const [state] = await standby.sql<{ recovering: boolean }[]>`
          select pg_is_in_recovery() as recovering`;
        if (!state?.recovering) throw new ClusterFailed("the standby is not in recovery");
        if (synchronous) {
          await primary.sql`alter system set synchronous_standby_names = '*'`;
          await primary.sql`select pg_reload_conf()`;
        }
        return {
          server: standby,
          /** Stops applying WAL (it is still received); resolves once paused. */
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
          /** Resolves once it has replayed all the primary had written when called. */
          async caughtUp(timeoutMs = 60_000) {
            const [row] = await primary.sql<{ lsn: string }[]>`
              select pg_current_wal_lsn() as lsn`;
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
          /** `pg_ctl promote`: the standby leaves recovery and takes writes. */
          async promote() {
            await run("pg_ctl", ["-D", folder, "-w", "-t", "60", "promote"], root);
          },
        };
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export type PrivatePostgres = Awaited<ReturnType<typeof startPrivatePostgres>>;
export type Standby = Awaited<ReturnType<PrivatePostgres["addStandby"]>>;
