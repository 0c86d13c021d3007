/**
 * No secret leaves the process. Node URLs carry provider keys in the userinfo, the path and the
 * query, database and Redis URLs carry passwords; each way a service can fail (refused, reset,
 * silent, a TLS certificate for another name, a name that does not resolve, an HTTP error, a
 * malformed answer) is provoked on loopback (or a `.invalid` name), and everything `status`,
 * `follow` and the API print, and /readyz, is searched for the secrets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../devnet/anvil.ts";
import { CHECK_TIMEOUT_MS } from "../../lib/connection-checks.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

const SECRET = {
  user: "userSecret7f3a9c",
  password: "passSecret2b8e1d",
  path: "pathSecret9c4d2e",
  query: "querySecret5a1f7b",
};
const secretsIn = (text: string) => Object.values(SECRET).filter((secret) => text.includes(secret));

/** `origin` (scheme://host:port) with a secret in each part a provider puts one. */
const withSecrets = (origin: string) =>
  origin.replace("://", `://${SECRET.user}:${SECRET.password}@`) +
  `/v3/${SECRET.path}?apikey=${SECRET.query}`;

/** A command's start and its first check of the node (bounded by the check's timeout). */
const PROCESS_MS = CHECK_TIMEOUT_MS.rpc + LOADED_MACHINE_MS;

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("secrets");
const servers: { stop(): unknown }[] = [];
const sockets = new Set<Socket>();
let certificateDir: string;

function tcpServer(onConnection: (socket: Socket) => void): Promise<number> {
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    onConnection(socket);
  });
  servers.push({ stop: () => server.close() });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
  );
}

function httpNode(answer: () => Response): string {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: answer });
  servers.push({ stop: () => server.stop(true) });
  return `http://127.0.0.1:${server.port}`;
}

/**
 * An HTTPS node whose certificate names another host. The commands trust the certificate
 * (NODE_EXTRA_CA_CERTS), so the failure is the name mismatch, whose message quotes the URL.
 */
function tlsNode(): string {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: {
      key: readFileSync(join(certificateDir, "key.pem"), "utf8"),
      cert: readFileSync(join(certificateDir, "cert.pem"), "utf8"),
    },
    fetch: () => Response.json({ jsonrpc: "2.0", id: 1, result: "0x1" }),
  });
  servers.push({ stop: () => server.stop(true) });
  return `https://127.0.0.1:${server.port}`;
}

beforeAll(async () => {
  database = await createScratchDatabase("secrets");
  certificateDir = mkdtempSync(join(tmpdir(), "cs-secrets-"));
  const made = Bun.spawnSync(
    ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"].concat(
      ["-keyout", join(certificateDir, "key.pem"), "-out", join(certificateDir, "cert.pem")],
      ["-subj", "/CN=another-host.invalid"],
    ),
  );
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  for (const server of servers) await server.stop();
  await database?.drop();
  await redis.clean();
  rmSync(certificateDir, { recursive: true, force: true });
});

const settings = (overrides: Record<string, string>) => ({
  PRESET: "mainnet",
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  RPC_WS_URL: undefined,
  STAKER_ADDRESS: undefined,
  START_BLOCK: undefined,
  CHAIN_ID: undefined,
  NODE_EXTRA_CA_CERTS: join(certificateDir, "cert.pem"),
  LOG_LEVEL: "info",
  ...overrides,
});

/**
 * What `status`, `follow` (until it reports the failure) and the API print, and /readyz. The three
 * run side by side: each waits out the same check timeouts, which in a row took most of the file's
 * time.
 */
async function everythingPrinted(env: Record<string, string | undefined>, variable: string) {
  const status = async () => {
    const result = await runCommand(["scripts/cli.ts", "status"], env, PROCESS_MS);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(variable);
    return [result.stdout, result.stderr];
  };
  const follow = async () => {
    const command = startCommand(["scripts/cli.ts", "follow", "--no-migrate"], env);
    try {
      await command.waitForLine(new RegExp(variable), PROCESS_MS).catch(() => undefined);
      expect(command.lines.join("\n")).toContain(variable);
    } finally {
      await command.stop();
    }
    return [command.lines.join("\n")];
  };
  const api = async () => {
    const port = await freePort();
    const command = startCommand(["api/main.ts"], { ...env, PORT: String(port) });
    const texts: string[] = [];
    try {
      const started = await command
        .waitForLine(/"msg":"listening"/, PROCESS_MS)
        .then(() => true)
        .catch(() => false);
      if (started) {
        const readyz = await fetch(`http://127.0.0.1:${port}/readyz`);
        texts.push(await readyz.text());
        expect(readyz.status).toBe(503);
      }
    } finally {
      await command.stop();
    }
    return [...texts, command.lines.join("\n")];
  };
  const printed = await Promise.all([status(), follow(), api()]);
  return printed.flat().join("\n");
}

const rpcFaults: [string, () => Promise<string>][] = [
  ["refused", async () => `http://127.0.0.1:${await freePort()}`],
  [
    "reset",
    async () => `http://127.0.0.1:${await tcpServer((socket) => socket.resetAndDestroy())}`,
  ],
  ["silent (timeout)", async () => `http://127.0.0.1:${await tcpServer(() => {})}`],
  ["a TLS certificate for another name", async () => tlsNode()],
  ["a name that does not resolve", async () => "https://node.invalid"],
  ...[401, 403, 429, 500, 503].map((code): [string, () => Promise<string>] => [
    `HTTP ${code}`,
    async () => httpNode(() => new Response(`status ${code} for ${SECRET.path}`, { status: code })),
  ]),
  [
    "a malformed answer",
    async () =>
      httpNode(
        () => new Response("{not json", { headers: { "content-type": "application/json" } }),
      ),
  ],
];

describe("RPC_URL with a key in its userinfo, path and query", () => {
  for (const [fault, node] of rpcFaults) {
    test(
      `${fault}: status, follow and the API print no part of it`,
      async () => {
        const printed = await everythingPrinted(
          settings({ RPC_URL: withSecrets(await node()) }),
          "RPC_URL",
        );
        expect(secretsIn(printed)).toEqual([]);
      },
      4 * PROCESS_MS,
    );
  }
});

describe("DATABASE_URL and REDIS_URL with a password and a query", () => {
  // A node that never answers: the command's other checks fail first, and it must be named.
  const silentNode = async () => `http://127.0.0.1:${await tcpServer(() => {})}`;

  test(
    "Postgres refusing: no part of DATABASE_URL is printed",
    async () => {
      const url = `postgres://postgres:${SECRET.password}@127.0.0.1:${await freePort()}/citizen_staking?application_name=${SECRET.query}`;
      const status = await runCommand(
        ["scripts/cli.ts", "status"],
        settings({ DATABASE_URL: url, RPC_URL: await silentNode() }),
        PROCESS_MS,
      );
      expect(status.stderr).toContain("DATABASE_URL");
      expect(secretsIn(status.stdout + status.stderr)).toEqual([]);
    },
    2 * PROCESS_MS,
  );

  test(
    "Redis refusing or refusing the password: no part of REDIS_URL is printed",
    async () => {
      const origins = [`redis://127.0.0.1:${await freePort()}`, redis.url];
      const statuses = await Promise.all(
        origins.map(async (origin) => {
          // A user Redis does not know: WRONGPASS (the default user would take any password).
          const url = `${origin.replace("://", `://no-such-user:${SECRET.password}@`)}/0?name=${SECRET.query}`;
          return runCommand(
            ["scripts/cli.ts", "status"],
            settings({ REDIS_URL: url, RPC_URL: await silentNode() }),
            PROCESS_MS,
          );
        }),
      );
      for (const status of statuses) {
        expect(status.stderr).toContain("REDIS_URL");
        expect(secretsIn(status.stdout + status.stderr)).toEqual([]);
      }
    },
    2 * PROCESS_MS,
  );
});
