/** Runs every benchmark in turn, each its own process, until one fails: `bun run bench [--smoke]`. */
import { runMain } from "./support/flags.ts";
import { log } from "./support/report.ts";

runMain(async () => {
  const passThrough = Bun.argv.includes("--smoke") ? ["--smoke"] : [];
  const started = performance.now();
  for (const name of ["backfill", "mainnet", "lag", "api"]) {
    log(`bench:${name} ${passThrough.join(" ")}`);
    const command = [process.execPath, `bench/${name}.ts`, ...passThrough];
    const stdio: ["ignore", "inherit", "inherit"] = ["ignore", "inherit", "inherit"];
    const code = await Bun.spawn(command, { cwd: `${import.meta.dir}/..`, stdio }).exited;
    if (code !== 0) return process.exit(code);
  }
  log(`all benchmarks done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
});
