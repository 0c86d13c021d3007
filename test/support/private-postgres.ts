/**
 * A Postgres server of a test's own, from Debian's binaries, listening where the test says (the
 * shared server listens on 127.0.0.1 only, and its settings are not ours to change). Trust
 * authentication, no fsync: a scratch server, removed with its data by `stop()`.
 */
import { appendFile, chown, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { runMigrations } from "../../db/migrate.ts";
import { runProcess, startProcess } from "./commands.ts";
import { LOADED_MACHINE_MS } from "./time.ts";

const BIN = "/usr/lib/postgresql/15/bin";

/** A port nothing listens on now, on 127.0.0.1 (the server binds it on every address it is given). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export async function startPrivatePostgres(options: { listen: string[] }) {
  const dir = await mkdtemp(join(tmpdir(), "cs-postgres-"));
  const { uid, gid } = await postgresUser();
  await chown(dir, uid, gid);
  const data = join(dir, "data");
  // setpriv execs: the child is the server itself, so a signal to it reaches the server.
  const asPostgres = (argv: string[]) => [
    "setpriv",
    `--reuid=${uid}`,
    `--regid=${gid}`,
    "--clear-groups",
    "--",
    ...argv,
  ];
  const place = { cwd: dir, env: { ...process.env, LC_ALL: "C.UTF-8" } };
  const initdb = await runProcess(
    asPostgres([`${BIN}/initdb`, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync"]),
    place,
    2 * LOADED_MACHINE_MS,
  );
  if (initdb.code !== 0) throw new Error(`initdb failed: ${initdb.stderr}`);
  // Any address on the server's own networks (the test hosts' bridge) may connect.
  await appendFile(join(data, "pg_hba.conf"), "host all all samenet trust\n");
  const port = await freePort();
  const server = startProcess(
    asPostgres([
      `${BIN}/postgres`,
      "-D",
      data,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      `listen_addresses=${["127.0.0.1", ...options.listen].join(",")}`,
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=200",
    ]),
    place,
  );
  const stop = async () => {
    // Fast shutdown: sessions are ended, the server exits; then its files go.
    server.child.kill("SIGINT");
    await server.child.exited;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await server.waitForLine(/database system is ready to accept connections/);
  } catch (error) {
    await stop();
    throw error;
  }

  /** The server's URL for `database` at `host` (one of the addresses it listens on). */
  const url = (host: string, database = "postgres") =>
    `postgres://postgres@${host}:${port}/${database}`;

  return {
    port,
    url,
    /** A fresh, migrated database; `url` reaches it from any address the server listens on. */
    async createDatabase(name: string) {
      const admin = postgres(url("127.0.0.1"), { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database "${name}"`);
      await admin.end({ timeout: 5 });
      await runMigrations(url("127.0.0.1", name));
      return {
        name,
        url: url("127.0.0.1", name),
        /** The server goes with its databases. */
        drop: async () => {},
      };
    },
    stop,
    lines: () => server.lines,
  };
}

async function postgresUser() {
  const [uid, gid] = await Promise.all(
    ["-u", "-g"].map(async (flag) => {
      const result = await runProcess(["id", flag, "postgres"], { cwd: "/", env: process.env });
      return Number(result.stdout.trim());
    }),
  );
  return { uid: uid!, gid: gid! };
}
