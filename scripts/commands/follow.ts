import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { logger } from "../../lib/log.ts";
import { closeOnSignal } from "../../lib/shutdown.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices, createStartupWaiter, migrate } from "./support/services.ts";

const log = logger("cli");

/** Adds `citizen-staking follow` to `program`; its description is its help text. */
export function addFollowCommand(program: Command): void {
  program
    .command("follow")
    .description(
      "index from the checkpoint (or the start block) and follow the head; runs chunk workers too",
    )
    .option("--no-migrate", "do not apply migrations on start")
    .action(async (options: { migrate: boolean }) => {
      const chain = await resolveChainSettings(config);
      const untilReachable = createStartupWaiter();
      await untilReachable(() =>
        checkServices({ database: options.migrate ? "may-create" : "existing", chain }),
      );
      if (options.migrate) await migrate();
      const indexer = await untilReachable(() => openIndexer(chain, { metrics: true }));
      // Before anything is announced: a supervisor may signal as soon as it reads a line.
      closeOnSignal(indexer.close, { log });
      const checkpoint = await untilReachable(async () =>
        indexer.ensureCheckpoint(await chain.startBlock()),
      );
      log.info(
        { indexedBlock: checkpoint.indexedBlock.toString(), staker: indexer.contracts.staker },
        "following",
      );
      await indexer.start({ follow: true });
    });
}
