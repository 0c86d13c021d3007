/**
 * Runs every benchmark in turn, each as its own process (`bun run bench [--smoke]`); flags are
 * passed to each. Stops at the first that fails.
 */
import { runMain } from "./support/flags.ts";
import { log } from "./support/report.ts";

export const BENCHMARKS = ["backfill", "mainnet", "lag", "api"] as const;

export class BenchmarkFailed extends Error {
  override name = "BenchmarkFailed";
}

async function main() {
  const passThrough = Bun.argv.slice(2).filter((flag) => flag === "--smoke");
  const started = performance.now();
  for (const name of BENCHMARKS) {
    log(`bench:${name} ${passThrough.join(" ")}`);
    const child = Bun.spawn([process.execPath, `bench/${name}.ts`, ...passThrough], {
      cwd: `${import.meta.dir}/..`,
      stdin: "ignore",
      stdout: "inherit",
      stderr: "inherit",
    });
    const code = await child.exited;
    if (code !== 0) throw new BenchmarkFailed(`bench:${name} exited with ${code}`);
  }
  log(`all benchmarks done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

if (import.meta.main) runMain(main);
