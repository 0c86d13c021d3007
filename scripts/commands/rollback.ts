import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { Refused } from "../../lib/fail.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { blockNumber } from "./support/arguments.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

/** Adds `citizen-staking rollback` to `program`; its description is its help text. */
export function addRollbackCommand(program: Command): void {
  program
    .command("rollback")
    .description(
      "forget everything indexed above a block, so it is indexed again from the chain (after ReorgTooDeep)",
    )
    .requiredOption("--to <block>", "the last block to keep", blockNumber)
    .action(async (options: { to: bigint }) => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "existing", redis: true, chain });
      const indexer = await openIndexer(chain);
      const checkpoint = await indexer.store.checkpoint();
      if (!checkpoint || options.to > checkpoint.indexedBlock) {
        throw new Refused(
          `--to ${options.to} is above the indexed block (${checkpoint?.indexedBlock ?? "none yet"}): nothing to roll back`,
        );
      }
      const { removedEvents } = await indexer.store.rollbackTo(options.to);
      console.log(
        `rolled back to block ${options.to}: ${removedEvents} events removed; \`follow\` indexes from ${options.to + 1n}`,
      );
      await indexer.close();
    });
}
