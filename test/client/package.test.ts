/**
 * The client as a dashboard project gets it: packed with `npm pack` (its prepack script builds
 * dist/), installed from the tarball into a fresh project outside the repository with npm and
 * with bun (the peer dependencies it declares come from the registry), type-checked by tsc with
 * typed calls and deliberate mistakes that must be caught, and run against a real API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApiHarness, STAKER } from "../api/support.ts";

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

async function run(command: string[], cwd: string) {
  const child = Bun.spawn(command, { cwd, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, code, output: stdout + stderr };
}

describe("the packed client in a fresh project", () => {
  let packDir: string;
  let tarball: string;
  let packed: string[];
  let api: Awaited<ReturnType<typeof createApiHarness>>;
  let server: ReturnType<typeof api.app.listen>;
  let base: string;
  const projects: string[] = [];

  beforeAll(async () => {
    packDir = await mkdtemp(join(tmpdir(), "client-pack-"));
    const pack = await run(["npm", "pack", "--json", "--pack-destination", packDir], CLIENT_DIR);
    if (pack.code !== 0) throw new Error(`npm pack failed:\n${pack.output}`);
    const [result] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
    tarball = join(packDir, result.filename);
    packed = result.files.map((file) => file.path).toSorted();

    api = await createApiHarness();
    await api.setCheckpoint(100n);
    await api.insertCitizens([{ season: 1, citizenId: 7n }]);
    server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${server.server!.port}`;
  });

  afterAll(async () => {
    await server?.stop(true);
    await api?.close();
    for (const dir of [packDir, ...projects])
      if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("the tarball holds the built script, one declaration file and the manifest", async () => {
    expect(packed).toEqual(["dist/index.d.ts", "dist/index.js", "package.json"]);
  });

  const managers = [
    {
      name: "npm",
      install: ["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"],
      runtime: "node",
    },
    { name: "bun", install: ["bun", "add"], runtime: "bun" },
  ];
  for (const manager of managers) {
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

      const checked = await run([TSC, "-p", "tsconfig.json"], project);
      expect(checked.output).toBe("");
      expect(checked.code).toBe(0);
      // Checking every declaration too: Elysia's own need Bun's types (an optional peer of
      // Elysia's), but none of the client's or the dashboard's is wrong.
      const strict = await run([TSC, "-p", "tsconfig.json", "--skipLibCheck", "false"], project);
      const ours = strict.output
        .split("\n")
        .filter((line) => line.includes("@citizen-staking") || line.startsWith("dashboard.ts"));
      expect(ours).toEqual([]);

      await Bun.write(join(project, "mistake.ts"), MISTAKE);
      const caught = await run([TSC, "-p", "tsconfig.json"], project);
      expect(caught.code).not.toBe(0);
      expect(caught.output).toContain("mistake.ts(3,");
      expect(caught.output).toContain("Property 'vaults' does not exist");
      await rm(join(project, "mistake.ts"));

      const ran = await run([manager.runtime, "run.mjs", base, api.token], project);
      expect(ran.code, ran.output).toBe(0);
      const served = await (
        await api.request(`/v1/staking/citizens/s1/7?address=${STAKER}`)
      ).json();
      expect(JSON.parse(ran.stdout)).toEqual({ found: served, missing: 404 });
    });
  }
});
