/**
 * Builds the package `npm pack` makes of this folder (its `prepack` script): dist/index.js, the
 * client bundled for any ESM runtime with its dependencies left as imports, and dist/index.d.ts,
 * every type the client exports in one file. The types come from the app's own schemas and
 * routes; dts-bundle-generator writes them out in full, so the package holds no path into the
 * API's source, and this script refuses a declaration that imports anything the package does
 * not declare (a relative path, a package missing from package.json, Bun's globals).
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import packageJson from "./package.json" with { type: "json" };

const here = import.meta.dir;
const dist = join(here, "dist");
const declarations = join(dist, "index.d.ts");

await rm(dist, { recursive: true, force: true });

const build = await Bun.build({
  entrypoints: [join(here, "index.ts")],
  outdir: dist,
  target: "browser",
  format: "esm",
  packages: "external",
});
if (!build.success) throw new AggregateError(build.logs, "the client did not build");

// The repository's project: the API's sources must compile for their types to be read. Its own
// check of the output is left out (it compiles Elysia's and Eden's declarations without the DOM
// and reports their errors); test/client/packed-client.ts compiles the packed package in a fresh
// project instead, as a dashboard would.
const generator = Bun.spawnSync(
  [
    join(here, "../node_modules/.bin/dts-bundle-generator"),
    "--project",
    join(here, "../tsconfig.json"),
    "--no-check",
    "--no-banner",
    "--export-referenced-types",
    "false",
    "--silent",
    "-o",
    declarations,
    join(here, "index.ts"),
  ],
  { stdout: "inherit", stderr: "inherit" },
);
if (generator.exitCode !== 0) throw new Error("the client's declarations did not build");

const declared = new Set([
  ...Object.keys(packageJson.dependencies),
  ...Object.keys(packageJson.peerDependencies),
]);
const text = await Bun.file(declarations).text();
const specifiers = [...text.matchAll(/(?:from |import\()["']([^"']+)["']/g)].map(
  (match) => match[1]!,
);
const undeclared = specifiers.filter((specifier) => !declared.has(specifier));
if (undeclared.length > 0 || /\bBun\./.test(text)) {
  throw new Error(
    `dist/index.d.ts must import only ${[...declared].join(", ")}; it imports ${[...new Set(undeclared)].join(", ") || "Bun's globals"}`,
  );
}
