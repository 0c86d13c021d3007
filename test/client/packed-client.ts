/**
 * The client as a dashboard project gets it: packed with `npm pack` (its prepack script builds
 * dist/; the tarball is kept between runs while nothing that decides it changes), installed from
 * the tarball into a fresh project outside the repository with npm and with bun (the peer
 * dependencies it declares come from the registry), type-checked by tsc with typed calls and
 * deliberate mistakes that must be caught, and run against a real API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApiHarness, STAKER } from "../api/support.ts";
import { cachedBuild, hashSources } from "../support/build-cache.ts";

const CLIENT_DIR = join(import.meta.dir, "../../client");
const TSC = join(import.meta.dir, "../../node_modules/.bin/tsc");

/** A dashboard's compiler settings: strict, for the browser, resolving as a bundler does. */
const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "ESNext",
    moduleResolution: "bundler",
    lib: ["ES2022", "DOM", "DOM.Iterable"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
  },
  include: ["*.ts"],
};

/** Typed calls each way, and mistakes the types must catch (an unused directive is an error). */
const DASHBOARD = `import {
  ApiProblem,
  type Citizen,
  type CitizenPage,
  createStakingClient,
  type S1Citizen,
} from "@citizen-staking/client";

const client = createStakingClient({ baseUrl: "http://127.0.0.1:3000", token: "cs_token" });
const address = "${STAKER}";

export async function show(): Promise<string> {
  const s1: S1Citizen = await client.citizen("s1", 7, address);
  const points: number = s1.totalPoints;
  const hand: boolean = s1.isHand;
  const vault: number = s1.vault.multiplier;
  // @ts-expect-error an S1 record has no vaults field
  s1.vaults;
  const s2 = await client.citizen("s2", "7", address, { block: 100n });
  // @ts-expect-error an S2 record has no vault
  s2.vault;
  const page: CitizenPage = await client.list(address, { sort: "totalPoints", limit: 10 });
  // @ts-expect-error the listing sorts by id, totalPoints or endTime
  await client.list(address, { sort: "points" });
  const all: Citizen[] = await client.listAll(address);
  const raw = await client.api.v1.staking.citizens.get({ query: { address, limit: "5" } });
  // @ts-expect-error the raw call's limit is the query's decimal string
  await client.api.v1.staking.citizens.get({ query: { address, limit: 5 } });
  // @ts-expect-error the API has no such route
  await client.api.v1.staking.wallets.get();
  // @ts-expect-error nor any at the root but its own (no route's path is a bare string)
  await client.api.v2({ file: "x" }).get();
  const live = client.watch(address, { onChange: (view) => view.citizens.size });
  live.close();
  try {
    await client.citizen("s1", 1, address);
  } catch (error) {
    if (error instanceof ApiProblem && error.status === 404) return error.detail;
  }
  return \`\${points} \${hand} \${vault} \${page.items.length} \${all.length} \${raw.status}\`;
}
`;

/** The same mistake without the directive: tsc must fail on it, naming the field. */
const MISTAKE = `import { createStakingClient } from "@citizen-staking/client";
const client = createStakingClient({ baseUrl: "http://127.0.0.1:3000", token: "cs_token" });
export const wrong = (await client.citizen("s1", 7, "${STAKER}")).vaults;
`;

/** Runs with the project's runtime against the API: a record, and a 404 as ApiProblem. */
const RUN = `import { ApiProblem, createStakingClient } from "@citizen-staking/client";
const [baseUrl, token] = process.argv.slice(2);
const client = createStakingClient({ baseUrl, token });
const found = await client.citizen("s1", 7, "${STAKER}");
let missing;
try {
  await client.citizen("s1", 8, "${STAKER}");
} catch (error) {
  missing = error instanceof ApiProblem ? error.status : String(error);
}
console.log(JSON.stringify({ found, missing }));
`;

/**
 * What decides the tarball: the client, the API sources its declarations are generated from,
 * the project's settings and lockfile, and the tools (npm, Bun's bundler, the declaration
 * bundler and the compiler under it).
 */
const PACK_SOURCES = [
  "client/*.{ts,json}",
  "{api,contracts,db,devnet,indexer,lib,ops,scratch}/**/*.ts",
  "{package.json,tsconfig.json,bun.lock}",
  "node_modules/{typescript,dts-bundle-generator}/package.json",
];

/**
 * The tarball `npm pack` makes of client/ and the files it holds. Its prepack build compiles the
 * API's sources for their types (the file's costliest step), so it is packed once per state of
 * what decides it (build-cache.ts).
 */
async function packClient(): Promise<{ tarball: string; files: string[] }> {
  const npm = (await run(["npm", "--version"], CLIENT_DIR)).stdout.trim();
  const key = await hashSources(PACK_SOURCES, [`npm ${npm}`, `bun ${Bun.version}`]);
  const folder = await cachedBuild("client-pack", key, async (into) => {
    const pack = await run(["npm", "pack", "--json", "--pack-destination", into], CLIENT_DIR);
    if (pack.code !== 0) throw new Error(`npm pack failed:\n${pack.output}`);
    const [result] = JSON.parse(pack.stdout) as [{ files: { path: string }[] }];
    await Bun.write(join(into, "files.json"), JSON.stringify(result.files.map((f) => f.path)));
  });
  const tarball = (await readdir(folder)).find((file) => file.endsWith(".tgz"));
  if (!tarball) throw new Error(`${folder} holds no tarball`);
  const files = (await Bun.file(join(folder, "files.json")).json()) as string[];
  return { tarball: join(folder, tarball), files };
}

async function run(command: string[], cwd: string) {
  const child = Bun.spawn(command, { cwd, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, code, output: stdout + stderr };
}

/** A package manager a dashboard project installs the tarball with, and the runtime it runs on. */
export interface PackageManager {
  name: string;
  install: string[];
  runtime: string;
}

/**
 * The suite of one manager: install, type-check, mistakes caught, a run against the API. Each
 * manager's in a file of its own (package-npm, package-bun), so the suite runs them side by side;
 * `packageChecks` adds what does not depend on the manager, once (in npm's): what the tarball
 * holds, and a compile that checks every declaration the project sees.
 */
export function describePackedClient(manager: PackageManager, options: { packageChecks: boolean }) {
  describe("the packed client in a fresh project", () => {
    let tarball: string;
    let packed: string[];
    let api: Awaited<ReturnType<typeof createApiHarness>>;
    let server: ReturnType<typeof api.app.listen>;
    let base: string;
    const projects: string[] = [];

    beforeAll(async () => {
      const pack = await packClient();
      tarball = pack.tarball;
      packed = pack.files.toSorted();

      api = await createApiHarness();
      await api.setCheckpoint(100n);
      await api.insertCitizens([{ season: 1, citizenId: 7n }]);
      server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
      base = `http://127.0.0.1:${server.server!.port}`;
    });

    afterAll(async () => {
      await server?.stop(true);
      await api?.close();
      for (const dir of projects) await rm(dir, { recursive: true, force: true });
    });

    if (options.packageChecks) {
      test("the tarball holds the built script, one declaration file and the manifest", async () => {
        expect(packed).toEqual(["dist/index.d.ts", "dist/index.js", "package.json"]);
      });
    }
    test(`installed with ${manager.name}: it type-checks, catches the mistakes, and runs on ${manager.runtime}`, async () => {
      const project = await mkdtemp(join(tmpdir(), `dashboard-${manager.name}-`));
      projects.push(project);
      await Bun.write(
        join(project, "package.json"),
        JSON.stringify({ name: "dashboard", private: true, type: "module" }),
      );
      await Bun.write(join(project, "tsconfig.json"), JSON.stringify(TSCONFIG));
      await Bun.write(join(project, "dashboard.ts"), DASHBOARD);
      await Bun.write(join(project, "run.mjs"), RUN);

      const installed = await run([...manager.install, tarball], project);
      expect(installed.code, installed.output).toBe(0);
      // The peers the package declares came from the registry, beside it.
      for (const peer of ["elysia", "@elysiajs/eden", "@sinclair/typebox"]) {
        expect(await Bun.file(join(project, "node_modules", peer, "package.json")).exists()).toBe(
          true,
        );
      }

      // One compile with the mistake beside the dashboard: the mistake's error is all it prints,
      // so the dashboard's typed calls compile and the mistake is caught, naming the field.
      await Bun.write(join(project, "mistake.ts"), MISTAKE);
      const checked = await run([TSC, "-p", "tsconfig.json"], project);
      expect(checked.code).not.toBe(0);
      const [error, ...others] = checked.output.trim().split("\n");
      expect(others).toEqual([]);
      expect(error).toStartWith("mistake.ts(3,");
      expect(error).toContain("Property 'vaults' does not exist");
      await rm(join(project, "mistake.ts"));
      // Checking every declaration too: Elysia's own need Bun's types (an optional peer of
      // Elysia's), but none of the client's or the dashboard's is wrong. The same declarations
      // whichever manager installed them, and the costliest step (15 s), so once.
      if (options.packageChecks) {
        const strict = await run([TSC, "-p", "tsconfig.json", "--skipLibCheck", "false"], project);
        const ours = strict.output
          .split("\n")
          .filter((line) => line.includes("@citizen-staking") || line.startsWith("dashboard.ts"));
        expect(ours).toEqual([]);
      }

      const ran = await run([manager.runtime, "run.mjs", base, api.token], project);
      expect(ran.code, ran.output).toBe(0);
      const served = await (
        await api.request(`/v1/staking/citizens/s1/7?address=${STAKER}`)
      ).json();
      expect(JSON.parse(ran.stdout)).toEqual({ found: served, missing: 404 });
    });
  });
}
