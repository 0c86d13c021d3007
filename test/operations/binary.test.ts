/**
 * The compiled binary on its own: built once per run by scripts/build-binary.sh, copied alone into
 * an empty directory, and run with no environment but its settings. Where the machine lets us
 * (root, or user namespaces), each run also sees an empty tmpfs where the source tree was, so a
 * path baked in at build time (node_modules, migrations, docs assets) cannot be read behind our
 * back. Against a devnet of this test's own: migrate, follow, token create, api, a request with
 * the token, and SIGTERM ending each long-running process with exit code 0.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import journal from "../../db/migrations/meta/_journal.json";
import { freePort } from "../../devnet/anvil.ts";
import { config } from "../../lib/config.ts";
import { writeDeploymentFile } from "../../lib/devnet-file.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runProcess, type SpawnPlace, startProcess } from "../support/commands.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

const REPO_ROOT = join(import.meta.dir, "..", "..");

/** `argv` run in a mount namespace where the repository is an empty tmpfs, or as is. */
let hidingSource: (argv: string[]) => string[] = (argv) => argv;

async function tryHidingSource(): Promise<boolean> {
  const asRoot = process.getuid?.() === 0 ? [] : ["--map-root-user"];
  const wrap = (argv: string[]) => [
    "unshare",
    "--mount",
    ...asRoot,
    "sh",
    "-c",
    // exec: the binary keeps the pid we signal.
    'mount -t tmpfs none "$1" && shift && exec "$@"',
    "sh",
    REPO_ROOT,
    ...argv,
  ];
  // Throws when unshare itself is missing.
  const probe = (() => {
    try {
      return Bun.spawnSync(wrap(["ls", "-A", REPO_ROOT]), { stderr: "ignore" });
    } catch {
      return undefined;
    }
  })();
  if (probe?.exitCode !== 0 || probe.stdout.toString().trim() !== "") return false;
  hidingSource = wrap;
  return true;
}

describe("the compiled binary, alone", () => {
  let devnet: ScenarioChain;
  let work: string;
  let binary: string;
  let place: SpawnPlace;
  let admin: postgres.Sql;
  let databaseName: string;
  /** What the build left in its output directory. */
  let built: string[];
  const redis = createScratchRedisPrefix("binary");
  const started: ReturnType<typeof startProcess>[] = [];

  const run = (args: string[], timeoutMs = 60_000) =>
    runProcess(hidingSource([binary, ...args]), place, timeoutMs);
  const start = (args: string[], env: Record<string, string> = {}) => {
    const child = startProcess(hidingSource([binary, ...args]), {
      ...place,
      env: { ...place.env, ...env },
    });
    started.push(child);
    return child;
  };

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "citizen-staking-binary-"));
    const building = performance.now();
    const build = await runProcess(
      ["./scripts/build-binary.sh", join(work, "build", "citizen-staking")],
      { cwd: REPO_ROOT, env: process.env },
      170_000,
    );
    if (build.code !== 0) throw new Error(`build failed:\n${build.stdout}\n${build.stderr}`);
    console.error(`binary built in ${((performance.now() - building) / 1000).toFixed(1)} s`);
    built = (await readdir(join(work, "build"))).sort();

    const alone = join(work, "alone");
    binary = join(alone, "citizen-staking");
    await mkdir(alone);
    await copyFile(join(work, "build", "citizen-staking"), binary);
    await chmod(binary, 0o755);
    if (!(await tryHidingSource())) {
      console.error("cannot unshare a mount namespace here: the source tree stays visible");
    }

    devnet = await startScenarioChain({ events: 120, seed: "binary" });
    const devnetFile = join(work, "devnet.json");
    await writeDeploymentFile(devnetFile, devnet.deployment);

    const adminUrl = new URL(config.databaseUrl);
    adminUrl.pathname = "/postgres";
    admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} });
    databaseName = `cs_binary_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    const databaseUrl = new URL(adminUrl);
    databaseUrl.pathname = `/${databaseName}`;
    place = {
      cwd: alone,
      // Only its settings: nothing from this Bun, this shell or this repository.
      env: {
        PATH: "/usr/bin:/bin",
        DATABASE_URL: databaseUrl.toString(),
        REDIS_URL: redis.url,
        QUEUE_PREFIX: redis.prefix,
        PRESET: "devnet",
        DEVNET_FILE: devnetFile,
        LOG_LEVEL: "info",
        SHUTDOWN_GRACE_MS: "10000",
      },
    };
  });

  afterAll(async () => {
    for (const child of started) if (child.child.exitCode === null) child.child.kill("SIGKILL");
    await devnet?.stop();
    await admin?.unsafe(`drop database if exists "${databaseName}" with (force)`);
    await admin?.end({ timeout: 5 });
    await redis.clean();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test("migrates, follows the devnet, serves a token's request and stops on SIGTERM with 0", async () => {
    const migrated = await run(["migrate"]);
    expect(migrated.stderr).toBe("");
    expect(migrated.code).toBe(0);
    const database = postgres(place.env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
    try {
      const [applied] = await database`select count(*)::int as n from drizzle.__drizzle_migrations`;
      expect(applied?.n).toBe(journal.entries.length);

      const follow = start(["follow"]);
      await follow.waitForLine(/"msg":"following"/, 60_000);
      const head = await devnet.client.getBlockNumber();
      let indexed = -1n;
      const deadline = Date.now() + 90_000;
      while (indexed < head && Date.now() < deadline) {
        const [row] = await database`select indexed_block from indexer_checkpoints`;
        indexed = row ? BigInt(row.indexed_block) : -1n;
        await Bun.sleep(100);
      }
      expect(indexed).toBeGreaterThanOrEqual(head);

      const created = await run(["token", "create", "--label", "binary"]);
      expect(created.code).toBe(0);
      const token = created.stdout.trim();

      const port = await freePort();
      const api = start(["api"], { HOST: "127.0.0.1", PORT: String(port) });
      await api.waitForLine(/"msg":"listening"/, 60_000);
      const base = `http://127.0.0.1:${port}`;

      // A citizen staked at the indexed block, as the staker itself reports it.
      const [staker] = await database`select staker from staked_citizens order by staker limit 1`;
      const wallet = staker?.staker as `0x${string}`;
      const positions = await devnet.client.readContract({
        address: devnet.deployment.addresses.staker,
        abi: stakerAbi,
        functionName: "getStakerPositions",
        args: [wallet],
        blockNumber: indexed,
      });
      const citizen = positions.stakedS1Citizens[0] ?? positions.stakedS2Citizens[0];
      const season = positions.stakedS1Citizens[0] ? "s1" : "s2";
      if (!citizen) throw new Error(`${wallet} has no citizen staked on chain`);
      const response = await fetch(
        `${base}/v1/staking/citizens/${season}/${citizen.citizenId}?address=${wallet}`,
        { headers: { authorization: `Bearer ${token}` } },
      );
      expect(response.status).toBe(200);
      const record = (await response.json()) as { id: string; type: string; totalPoints: number };
      expect(record).toMatchObject({
        id: String(citizen.citizenId),
        type: season,
        totalPoints: Number(citizen.points),
      });

      // The docs page's assets and the container's health check come from the binary too.
      const css = await fetch(`${base}/docs`)
        .then((page) => page.text())
        .then((page) => page.match(/\/docs\/assets\/[^"]+\.css/)?.[0]);
      expect((await fetch(`${base}${css}`)).status).toBe(200);
      const healthcheck = async (on: number) =>
        (
          await runProcess(hidingSource([binary, "healthcheck"]), {
            ...place,
            env: { ...place.env, PORT: String(on) },
          })
        ).code;
      expect(await healthcheck(port)).toBe(0);
      expect(await healthcheck(await freePort())).toBe(1);

      expect(await api.stop()).toBe(0);
      expect(await follow.stop()).toBe(0);
      expect(follow.lines.some((line) => /"level":"(error|fatal)"/.test(line))).toBe(false);
      // Every line is one of our JSON log lines: no runtime warning (a dependency's deprecation).
      const notLogLines = (lines: string[]) => lines.filter((line) => !line.startsWith("{"));
      expect({ follow: notLogLines(follow.lines), api: notLogLines(api.lines) }).toEqual({
        follow: [],
        api: [],
      });
    } finally {
      await database.end({ timeout: 5 });
    }
  });

  test("API_PROCESSES=2 starts its second process from the binary itself", async () => {
    expect((await run(["migrate"])).code).toBe(0);
    const port = await freePort();
    const api = start(["api"], { HOST: "127.0.0.1", PORT: String(port), API_PROCESSES: "2" });
    await api.waitForLine(/"processSlot":1,.*"msg":"listening"/, 60_000);
    const answered = new Set<string | null>();
    for (let i = 0; i < 200 && answered.size < 2; i++) {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, {
        headers: { connection: "close" },
      });
      expect(response.status).toBe(200);
      answered.add(response.headers.get("x-api-process"));
    }
    expect([...answered].sort()).toEqual(["0", "1"]);
    expect(await api.stop()).toBe(0);
  });

  test("--help and status print nothing on stderr", async () => {
    const [help, status] = await Promise.all([run(["--help"]), run(["status"])]);
    expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: "" });
    expect({ code: status.code, stderr: status.stderr }).toEqual({ code: 0, stderr: "" });
    expect(status.stdout).toMatch(/^redis {2,}ok$/m);
  });

  test("the build leaves the binary alone: its source map is inside it, no map file beside it", () => {
    expect(built).toEqual(["citizen-staking"]);
  });

  test("board refuses in one line, pointing at the source checkout", async () => {
    const board = await run(["board"]);
    expect(board.code).toBe(2);
    expect(board.stderr.trim()).toBe(
      "error: board is not in the compiled binary: run `bun scripts/cli.ts board` from a source checkout",
    );
  });
});
