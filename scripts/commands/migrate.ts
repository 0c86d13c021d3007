import type { Command } from "commander";
import { logger } from "../../lib/log.ts";
import { checkServices, migrate } from "./support/services.ts";

const log = logger("cli");

/** Adds `citizen-staking migrate` to `program`; its description is its help text. */
export function addMigrateCommand(program: Command): void {
  program
    .command("migrate")
    .description("create the database if needed and apply every migration")
    .action(async () => {
      await checkServices({ database: "may-create" });
      await migrate();
      log.info("migrations applied");
    });
}
