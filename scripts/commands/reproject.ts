import type { Command } from "commander";
import { createIndexerStore } from "../../indexer/store/index.ts";
import { checkServices } from "./support/services.ts";
import { withDatabase } from "./support/with-database.ts";

/** Adds `citizen-staking reproject` to `program`; its description is its help text. */
export function addReprojectCommand(program: Command): void {
  program
    .command("reproject")
    .description(
      "rebuild staked_citizens from the stored events and reads alone (no node needed), in one transaction, while the API keeps serving",
    )
    .action(async () => {
      await checkServices({ database: "existing" });
      const started = performance.now();
      const result = await withDatabase((db) => createIndexerStore(db).reproject());
      const seconds = (performance.now() - started) / 1000;
      console.log(
        `reprojected ${result.citizens} staked citizens as of block ${result.indexedBlock} in ${seconds.toFixed(1)} s`,
      );
    });
}
