import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildGeneratedFiles, GENERATED_DIR } from "../../contracts/build.ts";
import { cachedBuild, hashSources } from "../support/build-cache.ts";

const REBUILD = "run `bun run contracts:build` and commit contracts/generated";

/** What decides the compile: our sources, the build script, the compiler and the libraries. */
const COMPILE_SOURCES = [
  "contracts/src/**/*.sol",
  "contracts/mainnet/**/*",
  "contracts/build.ts",
  "node_modules/{solc,@openzeppelin/contracts}/package.json",
];

/**
 * The files a fresh compile makes. solc-js compiles every source in one pass (about 15 s), so
 * the result is kept while nothing that decides it changes (build-cache.ts).
 */
async function freshlyCompiled(): Promise<Map<string, string>> {
  const key = await hashSources(COMPILE_SOURCES);
  const folder = await cachedBuild("contracts-generated", key, async (into) => {
    await Bun.write(join(into, "files.json"), JSON.stringify([...buildGeneratedFiles()]));
  });
  const entries = (await Bun.file(join(folder, "files.json")).json()) as [string, string][];
  return new Map(entries);
}

test("contracts/generated matches a fresh compile of contracts/src", async () => {
  const expected = await freshlyCompiled();
  const onDisk = new Set(readdirSync(GENERATED_DIR));
  const problems: string[] = [];
  for (const [file, contents] of expected) {
    if (!onDisk.has(file)) problems.push(`${file} is missing`);
    else if (readFileSync(join(GENERATED_DIR, file), "utf8") !== contents) {
      problems.push(`${file} is stale`);
    }
  }
  for (const file of onDisk) {
    if (!expected.has(file)) problems.push(`${file} has no source contract`);
  }
  expect(problems, `contracts/generated is out of date: ${REBUILD}`).toEqual([]);
}, 120_000);
