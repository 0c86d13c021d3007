import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

/** Adds `citizen-staking refresh-metadata` to `program`; its description is its help text. */
export function addRefreshMetadataCommand(program: Command): void {
  program
    .command("refresh-metadata")
    .description(
      "read every citizen's metadata again at the head (50 to an eth_call) and keep what changed",
    )
    .action(async () => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "existing", redis: true, chain });
      const indexer = await openIndexer(chain);
      const { read, changed, unreadable, block } = await indexer.refreshMetadata((done) =>
        console.error(`metadata: ${done} citizens read`),
      );
      console.log(
        `metadata read at block ${block} for ${read} citizens: ${changed} changed, ${unreadable} unreadable at the head (kept as stored)`,
      );
      await indexer.close();
    });
}
