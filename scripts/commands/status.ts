import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { gatherStatus, renderStatus } from "../../ops/status.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

/** Adds `citizen-staking status` to `program`; its description is its help text. */
export function addStatusCommand(program: Command): void {
  program
    .command("status")
    .description(
      "head, finality boundary, indexed block, lag, queues, failures and recorded read failures",
    )
    .action(async () => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "existing", redis: true, chain });
      const indexer = await openIndexer(chain, { readOnly: true });
      const status = await gatherStatus(indexer);
      const settings = {
        queuePrefix: config.queuePrefix,
        finalityDepth: config.indexer.finalityDepth,
      };
      for (const line of renderStatus(status, settings)) console.log(line);
      await indexer.close();
    });
}
