import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildGeneratedFiles, GENERATED_DIR } from "../../contracts/build.ts";

const REBUILD = "run `bun run contracts:build` and commit contracts/generated";

// solc-js compiles every source in one pass, which takes about 15 s.
test("contracts/generated matches a fresh compile of contracts/src", () => {
  const expected = buildGeneratedFiles();
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
