/**
 * docker-compose.yml without a Docker engine: `docker-compose config` (Debian's, installed by
 * scripts/bootstrap.sh) validates and resolves it offline, and every service that runs our code
 * runs here as its container would: the Dockerfile's ENTRYPOINT for its target (the binary is
 * `bun scripts/cli.ts`, the same program) with the service's command and environment, service
 * hostnames pointed at the local Postgres, Redis and an anvil started with the anvil service's
 * own arguments, and the database, queue prefix, ports and shared volume made this test's own.
 * One-shot services must exit 0; the others must start, and stop with 0 on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createPublicClient, http } from "viem";
import { anvilBinaryPath, freePort } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runProcess, type SpawnPlace, startProcess } from "../support/commands.ts";

const REPO_ROOT = join(import.meta.dir, "..", "..");

type Service = {
  image?: string;
  build?: { target?: string };
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  profiles?: string[];
  ports?: string[];
  container_name?: string;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
};

/** Each build target's ENTRYPOINT, and the runtime image's HEALTHCHECK command. */
async function readDockerfile() {
  const text = await readFile(join(REPO_ROOT, "Dockerfile"), "utf8");
  const entrypoints = new Map<string, string[]>();
  let target = "";
  let healthcheck: string[] = [];
  for (const line of text.replace(/\\\n\s*/g, " ").split("\n")) {
    const from = line.match(/^FROM\s+\S+\s+AS\s+(\S+)/i);
    if (from?.[1]) target = from[1];
    const entrypoint = line.match(/^ENTRYPOINT\s+(\[.*\])/);
    if (entrypoint?.[1]) entrypoints.set(target, JSON.parse(entrypoint[1]));
    const check = line.match(/^HEALTHCHECK .*CMD\s+(\[.*\])/);
    if (check?.[1] && target === "runtime") healthcheck = JSON.parse(check[1]);
  }
  return { entrypoints, healthcheck };
}

/** A container's argv as run from this checkout: our binary is the CLI, `bun` is this Bun. */
function fromSource(argv: string[]): string[] {
  const [program, ...rest] = argv;
  if (program === "citizen-staking") return [process.execPath, "scripts/cli.ts", ...rest];
  if (program === "bun") return [process.execPath, ...rest];
  throw new Error(`${program} is not one of our programs`);
}

async function waitForNode(rpcUrl: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answered = await createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) })
      .getChainId()
      .catch(() => undefined);
    if (answered !== undefined) return;
    if (Date.now() > deadline) throw new Error(`anvil did not answer on ${rpcUrl}`);
    await Bun.sleep(50);
  }
}

describe("docker-compose.yml", () => {
  let services: Record<string, Service>;
  let dockerfile: Awaited<ReturnType<typeof readDockerfile>>;
  let work: string;
  let databaseName: string;
  let admin: postgres.Sql;
  const redis = createScratchRedisPrefix("compose");
  const started: ReturnType<typeof startProcess>[] = [];

  beforeAll(async () => {
    // Only PATH: the file's own defaults, not this shell's settings, are what is checked.
    const resolved = await runProcess(
      ["docker-compose", "--profile", "devnet", "config"],
      { cwd: REPO_ROOT, env: { PATH: process.env.PATH } },
      60_000,
    ).catch((error: Error) => {
      throw new Error(
        `docker-compose is needed (scripts/bootstrap.sh installs it): ${error.message}`,
      );
    });
    if (resolved.code !== 0) throw new Error(`docker-compose config: ${resolved.stderr}`);
    services = (Bun.YAML.parse(resolved.stdout) as { services: Record<string, Service> }).services;
    dockerfile = await readDockerfile();
    work = await mkdtemp(join(tmpdir(), "citizen-staking-compose-"));
    const adminUrl = new URL(config.databaseUrl);
    adminUrl.pathname = "/postgres";
    admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} });
    databaseName = `cs_compose_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  });

  afterAll(async () => {
    for (const child of started) if (child.child.exitCode === null) child.child.kill("SIGKILL");
    await admin?.unsafe(`drop database if exists "${databaseName}" with (force)`);
    await admin?.end({ timeout: 5 });
    await redis.clean();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test("holds the whole system; workers scale; the devnet is a profile", () => {
    expect(Object.keys(services).sort()).toEqual(
      ["anvil", "api", "devnet", "follow", "migrate", "postgres", "redis", "worker"].sort(),
    );
    const worker = services.worker as Service;
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toBeUndefined();
    for (const name of ["follow", "worker", "api"]) {
      expect(services[name]?.depends_on?.migrate?.condition).toBe("service_completed_successfully");
      expect(services[name]?.profiles).toBeUndefined();
    }
    expect(services.anvil?.profiles).toEqual(["devnet"]);
    expect(services.devnet?.profiles).toEqual(["devnet"]);
    // The indexer's processes serve no /healthz: the image's check is the API's alone.
    expect(services.follow?.healthcheck?.test).toEqual(["NONE"]);
    expect(services.api?.healthcheck?.test.slice(1)).toEqual(dockerfile.healthcheck);
  });

  test("every service of ours starts with its command and environment", async () => {
    const ports = new Map<string, number>();
    const devnetFile = join(work, "devnet.json");
    const localise = (value: string): string => {
      if (/^(postgres|redis):\/\//.test(value)) {
        const url = new URL(value);
        if (!services[url.hostname]) return value;
        const local = new URL(url.protocol === "redis:" ? redis.url : config.databaseUrl);
        url.host = local.host;
        if (url.protocol !== "redis:") url.pathname = `/${databaseName}`;
        return url.toString();
      }
      if (/^https?:\/\//.test(value)) {
        const url = new URL(value);
        const port = ports.get(url.hostname);
        if (port === undefined) return value;
        url.hostname = "127.0.0.1";
        url.port = String(port);
        return url.toString().replace(/\/$/, "");
      }
      return value.replace(/^\/devnet\/devnet\.json$/, devnetFile);
    };
    const place = (service: Service, extra: Record<string, string> = {}): SpawnPlace => {
      const env: Record<string, string | undefined> = { PATH: process.env.PATH };
      for (const [name, value] of Object.entries(service.environment ?? {})) {
        env[name] = localise(value);
      }
      env.QUEUE_PREFIX &&= redis.prefix;
      if (env.HOST) env.HOST = "127.0.0.1";
      return { cwd: REPO_ROOT, env: { ...env, LOG_LEVEL: "info", ...extra } };
    };
    const argvOf = (service: Service): string[] => {
      const target = service.build?.target;
      const entrypoint = service.entrypoint ?? (target ? dockerfile.entrypoints.get(target) : []);
      if (!entrypoint) throw new Error(`no ENTRYPOINT for target ${target}`);
      return fromSource([...entrypoint, ...(service.command ?? []).map(localise)]);
    };
    const start = (argv: string[], where: SpawnPlace) => {
      const child = startProcess(argv, where);
      started.push(child);
      return child;
    };

    // anvil: the service's own arguments, to the anvil our tests use, on a port of our own.
    const anvilPort = await freePort();
    const anvilService = services.anvil as Service;
    const anvilArgs = (anvilService.command ?? []).map((arg) =>
      arg === "0.0.0.0" ? "127.0.0.1" : arg,
    );
    const anvil = Bun.spawn([anvilBinaryPath(), ...anvilArgs, "--port", String(anvilPort)], {
      stdout: "ignore",
      stderr: "pipe",
    });
    try {
      await waitForNode(`http://127.0.0.1:${anvilPort}`);
      ports.set("anvil", anvilPort);
      const devnetService = services.devnet as Service;
      const devnet = start(argvOf(devnetService), place(devnetService));
      await devnet.waitForLine(/addresses written to/, 120_000);
      expect(await Bun.file(devnetFile).exists()).toBe(true);

      const migrateService = services.migrate as Service;
      const migrated = await runProcess(argvOf(migrateService), place(migrateService), 120_000);
      expect(migrated.stderr).toBe("");
      expect(migrated.code).toBe(0);

      const follow = start(argvOf(services.follow as Service), place(services.follow as Service));
      const worker = start(argvOf(services.worker as Service), place(services.worker as Service));
      const apiPort = await freePort();
      const apiService = services.api as Service;
      const apiPlace = place(apiService, { PORT: String(apiPort) });
      const api = start(argvOf(apiService), apiPlace);
      await follow.waitForLine(/"msg":"following"/, 120_000);
      await worker.waitForLine(/"msg":"worker taking chunk jobs"/, 120_000);
      await api.waitForLine(/"msg":"listening"/, 120_000);

      const healthcheck = apiService.healthcheck?.test.slice(1) ?? [];
      const healthy = await runProcess(fromSource(healthcheck), apiPlace, 30_000);
      expect(healthy.code).toBe(0);

      for (const child of [api, worker, follow, devnet]) expect(await child.stop()).toBe(0);
      for (const child of [api, worker, follow]) {
        expect(child.lines.filter((line) => /"level":"(error|fatal)"/.test(line))).toEqual([]);
      }
    } finally {
      anvil.kill("SIGTERM");
      await anvil.exited;
    }
  });
});
