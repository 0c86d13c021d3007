import type { Command } from "commander";
import { runApi } from "../../api/server.ts";

/** Adds `citizen-staking api` to `program`; its description is its help text. */
export function addApiCommand(program: Command): void {
  program
    .command("api")
    .description("serve the read API on HOST:PORT (what `bun api/main.ts` runs)")
    .option("--migrate", "create the database if needed and apply the migrations first")
    .action((options: { migrate?: boolean }) => runApi({ migrate: options.migrate === true }));
}
