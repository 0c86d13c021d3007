/**
 * docker-compose.yml, unchanged, on a real container engine: `--profile devnet up`, the API's
 * health check, a token from `run --rm migrate token create`, the API against the staker's own
 * views, workers scaled to 3, a process killed and brought back by the restart policy, `verify`
 * clean, a process still starting that stops at once, every container stopping with 0, and the
 * runtime image holding the binary alone.
 * Run by scripts/container-test.sh, which builds the images and starts the engine; this file
 * talks to the engine only through DOCKER_HOST's socket (docker-compose and the Docker API), and
 * kills one process by its pid on this host, so it runs against a local Docker as well. Not a
 * `*.test.ts`: `bun test` alone never starts it.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Queue } from "bullmq";
import IORedis from "ioredis";
import postgres from "postgres";
import { type Address, createPublicClient, formatUnits, http } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { freePort } from "../../devnet/anvil.ts";
import { QUEUE } from "../../indexer/queues/queues.ts";
import { runProcess } from "../support/commands.ts";

const REPO_ROOT = join(import.meta.dir, "..", "..");
const DOCKER_HOST = process.env.DOCKER_HOST ?? "";
const PROJECT = process.env.COMPOSE_PROJECT_NAME ?? "";
/** The engine's grace period before SIGKILL on stop, where the compose file sets none. */
const DEFAULT_STOP_TIMEOUT_S = 10;

type ContainerState = {
  Id: string;
  Name: string;
  RestartCount: number;
  Config: { Image: string };
  State: {
    Status: string;
    Running: boolean;
    ExitCode: number;
    Pid: number;
    StartedAt: string;
    FinishedAt: string;
    Health?: { Status: string };
  };
};

type CitizenRecord = {
  id: string;
  type: "s1" | "s2";
  timelock: { endTime: number };
  bytes: { staked: number };
  totalPoints: number;
  stakedVaultId?: number;
  hasVault?: boolean;
};

/** The Docker API on DOCKER_HOST's socket. */
async function engine<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(`http://engine/v1.41${path}`, {
    ...init,
    unix: DOCKER_HOST.replace(/^unix:\/\//, ""),
  });
  if (!response.ok) {
    throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${await response.text()}`);
  }
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/** The project's containers of `service` (all services when absent), running or not. */
async function containers(service?: string): Promise<ContainerState[]> {
  const labels = [`com.docker.compose.project=${PROJECT}`];
  if (service) labels.push(`com.docker.compose.service=${service}`);
  const list = await engine<{ Id: string }[]>(
    `/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label: labels }))}`,
  );
  return Promise.all(list.map(({ Id }) => engine<ContainerState>(`/containers/${Id}/json`)));
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await Bun.sleep(500);
  }
}

/** Paths (and, with `verbose`, tar's long lines) of an image's file system. */
async function imageFiles(image: string, verbose = false): Promise<string[]> {
  const { Id } = await engine<{ Id: string }>("/containers/create", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ Image: image, Entrypoint: ["/nonexistent"], Cmd: [] }),
  });
  try {
    const exported = await fetch(`http://engine/v1.41/containers/${Id}/export`, {
      unix: DOCKER_HOST.replace(/^unix:\/\//, ""),
    });
    const tar = Bun.spawn(["tar", verbose ? "-tvf" : "-tf", "-", "--numeric-owner"], {
      stdin: exported,
      stdout: "pipe",
    });
    const listing = await new Response(tar.stdout).text();
    expect(await tar.exited).toBe(0);
    return listing
      .split("\n")
      .filter(Boolean)
      .map((line) => line.replace(/^\.\//, ""));
  } finally {
    await engine(`/containers/${Id}?force=true`, { method: "DELETE" });
  }
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

describe("docker-compose.yml on a container engine", () => {
  const ports: Record<string, string> = {};
  let token = "";
  let stakerContract: Address;
  let apiBase: string;
  let chain: ReturnType<typeof createPublicClient>;

  const compose = (args: string[], timeoutMs = 120_000) =>
    runProcess(
      ["docker-compose", "--profile", "devnet", ...args],
      {
        cwd: REPO_ROOT,
        // The file's own defaults, not this shell's settings: only the engine, the project's
        // name and free host ports (this machine runs its own Postgres and Redis on theirs).
        env: { PATH: process.env.PATH, DOCKER_HOST, COMPOSE_PROJECT_NAME: PROJECT, ...ports },
      },
      timeoutMs,
    );
  const composeOk = async (args: string[], timeoutMs?: number) => {
    const result = await compose(args, timeoutMs);
    if (result.code !== 0) {
      throw new Error(`docker-compose ${args.join(" ")}: exit ${result.code}\n${result.stderr}`);
    }
    return result;
  };
  const get = (path: string) =>
    fetch(`${apiBase}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const indexedBlock = async () => {
    const response = await get(`/v1/staking/citizens?address=${stakerContract}&limit=1`);
    return BigInt(response.headers.get("x-indexed-block") ?? "-1");
  };
  const logsOf = async (service: string) => (await compose(["logs", "--no-color", service])).stdout;

  beforeAll(async () => {
    if (!DOCKER_HOST.startsWith("unix://") || !PROJECT) {
      throw new Error("run by scripts/container-test.sh (DOCKER_HOST, COMPOSE_PROJECT_NAME)");
    }
    for (const name of ["API_PORT", "POSTGRES_PORT", "REDIS_PORT", "ANVIL_PORT"]) {
      ports[name] = String(await freePort());
    }
    apiBase = `http://127.0.0.1:${ports.API_PORT}`;
    chain = createPublicClient({ transport: http(`http://127.0.0.1:${ports.ANVIL_PORT}`) });
  });

  test("`run --rm migrate` on a fresh Postgres waits for it to be ready, and exits 0", async () => {
    // The first container to mount the new `devnet` volume is this runtime one, read-only: the
    // devnet must still be able to write its file there once `up` starts it.
    const migrated = await composeOk(["run", "--rm", "-T", "migrate"], 300_000);
    // Postgres was healthy when it started: no "does not answer" while the image initialised it.
    expect(migrated.stderr.split("\n").filter((line) => /"level":"warn"/.test(line))).toEqual([]);
  });

  test("`--profile devnet up` starts every service and the API's health check passes", async () => {
    const up = performance.now();
    await composeOk(["up", "--detach"], 600_000);
    const api = await until("the api container healthy", 180_000, async () => {
      const [state] = await containers("api");
      return state?.State.Health?.Status === "healthy" ? state : undefined;
    });
    console.error(`up and the API healthy in ${((performance.now() - up) / 1000).toFixed(1)} s`);
    expect(api.State.Running).toBe(true);

    const [migrate] = await containers("migrate");
    expect(migrate?.State).toMatchObject({ Status: "exited", ExitCode: 0 });
    for (const service of ["postgres", "redis", "anvil", "devnet", "follow", "worker", "api"]) {
      const [state] = await containers(service);
      expect({ service, running: state?.State.Running }).toEqual({ service, running: true });
      // The indexer's processes exit while the devnet's file is missing and are started again.
      if (state?.RestartCount) console.error(`${service} restarted ${state.RestartCount} times`);
    }
  });

  test("a token from `run --rm migrate token create` reads citizens equal to the chain's", async () => {
    const created = await composeOk([
      "run",
      "--rm",
      "-T",
      "migrate",
      "token",
      "create",
      "--label",
      "container-test",
    ]);
    token = created.stdout.match(/^cs_\S+$/m)?.[0] ?? "";
    expect(token).not.toBe("");
    const devnetFile = await composeOk(["exec", "-T", "devnet", "cat", "/devnet/devnet.json"]);
    stakerContract = JSON.parse(devnetFile.stdout).addresses.staker;

    // Caught up with the scenario: the head when asked, indexed.
    const head = await chain.getBlockNumber();
    await until("the API at the chain's head", 180_000, async () =>
      (await indexedBlock()) >= head ? true : undefined,
    );

    const database = postgres(
      `postgres://postgres:postgres@127.0.0.1:${ports.POSTGRES_PORT}/citizen_staking`,
      { max: 1, onnotice: () => {} },
    );
    const wallets = await database`select staker, count(*)::int as n from staked_citizens
      group by staker order by n desc, staker limit 5`;
    await database.end({ timeout: 5 });
    expect(wallets.length).toBeGreaterThan(0);

    let compared = 0;
    for (const { staker: wallet } of wallets) {
      const listing = await get(`/v1/staking/citizens?address=${wallet}&limit=100`);
      expect(listing.status).toBe(200);
      const at = BigInt(listing.headers.get("x-indexed-block") ?? "-1");
      const { items } = (await listing.json()) as { items: CitizenRecord[] };
      const positions = await chain.readContract({
        address: stakerContract,
        abi: stakerAbi,
        functionName: "getStakerPositions",
        args: [wallet as Address],
        blockNumber: at,
      });
      const onChain = [
        ...positions.stakedS1Citizens.map((c) => ({ ...c, type: "s1" as const })),
        ...positions.stakedS2Citizens.map((c) => ({ ...c, type: "s2" as const })),
      ];
      const byKey = new Map(items.map((item) => [`${item.type}:${item.id}`, item]));
      expect([...byKey.keys()].sort()).toEqual(
        onChain.map((c) => `${c.type}:${c.citizenId}`).sort(),
      );
      for (const citizen of onChain) {
        const record = byKey.get(`${citizen.type}:${citizen.citizenId}`);
        expect(record?.totalPoints).toBe(Number(citizen.points));
        expect(record?.timelock.endTime).toBe(Number(citizen.timelockEndTime));
        expect(record?.bytes.staked).toBe(Number(formatUnits(citizen.stakedBytes, 18)));
        if (citizen.type === "s1" && "hasVault" in citizen) {
          expect(record?.hasVault).toBe(citizen.hasVault);
          expect(record?.stakedVaultId).toBe(Number(citizen.stakedVaultId));
        }
        compared++;
      }
    }
    console.error(`${compared} citizens of ${wallets.length} wallets equal the staker's views`);
    expect(compared).toBeGreaterThan(0);
  });

  test("workers scale to 3, each taking chunk jobs", async () => {
    await composeOk(["up", "--detach", "--no-recreate", "--scale", "worker=3"], 300_000);
    const workers = await containers("worker");
    expect(workers.map((worker) => worker.State.Running)).toEqual([true, true, true]);
    // Every chunk worker holds a named connection on the queue: 3 workers and the follower.
    const redis = new IORedis(`redis://127.0.0.1:${ports.REDIS_PORT}`, {
      maxRetriesPerRequest: null,
    });
    const chunks = new Queue(QUEUE.chunks, { connection: redis, prefix: "citizen-staking" });
    try {
      await until("4 chunk workers on the queue", 120_000, async () =>
        (await chunks.getWorkersCount()) === 4 ? true : undefined,
      );
    } finally {
      await chunks.close();
      redis.disconnect();
    }
    // Each one says so in its own log (docker-compose prefixes lines with service_number).
    const logs = await logsOf("worker");
    const saying = logs.matchAll(/^(\S*worker[-_]\d+)\s+\|.*"msg":"worker taking chunk jobs"/gm);
    expect(new Set([...saying].map((line) => line[1])).size).toBe(3);
  });

  test("the follower, killed, is started again by its restart policy and follows on", async () => {
    const [before] = await containers("follow");
    if (!before) throw new Error("no follow container");
    const blockAtKill = await indexedBlock();
    // What a crash or the OOM killer does: the follower (the child of tini, the container's
    // PID 1) dies, nobody stops it.
    const pid = before.State.Pid;
    const children = (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8")).trim();
    expect(children).toMatch(/^\d+$/);
    process.kill(Number(children), "SIGKILL");
    const after = await until("follow restarted", 60_000, async () => {
      const [state] = await containers("follow");
      return state?.State.Running && state.RestartCount > before.RestartCount ? state : undefined;
    });
    expect(after.State.StartedAt).not.toBe(before.State.StartedAt);
    // The devnet mines a block every 2 s: the restarted follower indexes new ones.
    await until("the indexed block past the kill", 120_000, async () =>
      (await indexedBlock()) > blockAtKill + 2n ? true : undefined,
    );
    const verified = await composeOk(["run", "--rm", "-T", "migrate", "verify"], 300_000);
    expect(verified.stdout).toMatch(/: 0 mismatches$/m);
  });

  test("a process still starting stops at once on SIGTERM, not at the engine's SIGKILL", async () => {
    // The follower of the runtime image, waiting for services that never answer (closed ports).
    const [follow] = await containers("follow");
    const { Id } = await engine<{ Id: string }>("/containers/create", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        Image: follow?.Config.Image,
        Cmd: ["follow"],
        Env: [
          "PRESET=mainnet",
          "RPC_URL=http://127.0.0.1:1",
          `STAKER_ADDRESS=${stakerContract}`,
          "START_BLOCK=1",
          "DATABASE_URL=postgres://postgres:postgres@127.0.0.1:2/citizen_staking",
          "REDIS_URL=redis://127.0.0.1:3",
        ],
        // The harness removes whatever this project leaves behind.
        Labels: { "com.docker.compose.project": PROJECT },
      }),
    });
    const logs = () =>
      fetch(`http://engine/v1.41/containers/${Id}/logs?stdout=1&stderr=1`, {
        unix: DOCKER_HOST.replace(/^unix:\/\//, ""),
      }).then((response) => response.text());
    let seconds: number;
    let State: ContainerState["State"];
    try {
      await engine(`/containers/${Id}/start`, { method: "POST" });
      await until("the follower waiting for its node", 60_000, async () =>
        /does not answer, for now/.test(await logs()) ? true : undefined,
      ).catch(async (error: Error) => {
        throw new Error(`${error.message}; its log:\n${await logs().catch(String)}`);
      });
      const stopping = performance.now();
      await engine(`/containers/${Id}/stop?t=${DEFAULT_STOP_TIMEOUT_S}`, { method: "POST" });
      seconds = (performance.now() - stopping) / 1000;
      ({ State } = await engine<ContainerState>(`/containers/${Id}/json`));
    } finally {
      // Removed whatever happened: the stop test counts the project's containers.
      await engine(`/containers/${Id}?force=true`, { method: "DELETE" });
    }
    console.error(`a starting follower stopped in ${seconds.toFixed(1)} s with ${State.ExitCode}`);
    // Its SIGTERM handler is in place before it waits (lib/shutdown.ts): exit 0, as outside a
    // container; never the signal's 143 nor the engine's SIGKILL.
    expect(State.ExitCode).toBe(0);
    expect(seconds).toBeLessThan(DEFAULT_STOP_TIMEOUT_S / 2);
  });

  test("stop: every container exits 0 on its stop signal, the node gone first", async () => {
    const running = (await containers()).filter((state) => state.State.Running);
    const stopping = Date.now();
    // compose may stop anvil before the follower (it cannot depend on a profile's service): the
    // follower then waits out its own grace for the node, inside the engine's.
    await composeOk(["stop", "devnet", "anvil"], 120_000);
    // Each service's own grace period (stop_grace_period, else the engine's 10 s).
    await composeOk(["stop"], 120_000);
    const stopped = await containers();
    const outcome = stopped
      .filter((state) => running.some((was) => was.Id === state.Id))
      .map((state) => ({
        name: state.Name.replace(/^\//, ""),
        status: state.State.Status,
        exitCode: state.State.ExitCode,
        seconds: (Date.parse(state.State.FinishedAt) - stopping) / 1000,
      }));
    console.error(outcome.map((o) => `${o.name}: ${o.exitCode} after ${o.seconds} s`).join("\n"));
    // postgres, redis, anvil, devnet, follow, 3 workers, api.
    expect(outcome.length).toBe(9);
    // 0 is the process's own exit: the engine's SIGKILL at the end of the grace gives 137.
    expect(outcome.filter((o) => o.status !== "exited" || o.exitCode !== 0)).toEqual([]);
  });

  test("the runtime image: non-root, the binary alone over its base, and its size", async () => {
    const dockerfile = await readFile(join(REPO_ROOT, "Dockerfile"), "utf8");
    const base = dockerfile.match(/^FROM\s+(\S+)\s+AS\s+runtime$/im)?.[1];
    if (!base) throw new Error("the Dockerfile has no runtime target");
    const [api] = await containers("api");
    const imageName = api?.Config.Image ?? "";
    const image = await engine<{ Size: number; Config: { User: string } }>(
      `/images/${encodeURIComponent(imageName)}/json`,
    );
    const baseImage = await engine<{ Size: number }>(`/images/${encodeURIComponent(base)}/json`);
    expect(image.Config.User).toBe("10001");

    const files = await imageFiles(imageName);
    const baseFiles = new Set(await imageFiles(base));
    const added = files.filter((path) => !baseFiles.has(path)).sort();
    // Beside the binary, tini and /devnet: the user's entries in the account files (and their
    // backups), apt's and dpkg's records and logs of tini's install, tini's copyright, and the
    // files the engine mounts into every RUN step.
    const bookkeeping = new RegExp(
      [
        "^etc/((passwd|group|shadow|gshadow)-?|hosts|hostname|resolv\\.conf)$",
        "^var/(lib|cache)/(apt|dpkg)/",
        "^var/log/",
        "^usr/share/doc/tini/",
      ].join("|"),
    );
    expect(added.filter((path) => !bookkeeping.test(path))).toEqual([
      "devnet/",
      "usr/bin/tini",
      "usr/bin/tini-static",
      "usr/local/bin/citizen-staking",
    ]);
    const strays = files.filter((path) =>
      /(^|\/)(bun|bunx|node|node_modules|package\.json|bun\.lock)\/?$|\.[cm]?tsx?$|^src\//.test(
        path,
      ),
    );
    expect(strays).toEqual([]);

    // Owned by root and not writable by the user it runs as.
    const long = await imageFiles(imageName, true);
    const binary = long.find((line) => line.endsWith(" usr/local/bin/citizen-staking"));
    const [mode, owner, size] = binary?.split(/\s+/) ?? [];
    expect(mode).toBe("-rwxr-xr-x");
    expect(owner).toBe("0/0");
    console.error(
      `runtime image ${imageName}: ${megabytes(image.Size)} (base ${base}: ${megabytes(baseImage.Size)}, binary ${megabytes(Number(size))})`,
    );
  });
});
