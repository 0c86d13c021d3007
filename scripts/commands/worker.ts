import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { logger } from "../../lib/log.ts";
import { closeOnSignal } from "../../lib/shutdown.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices, createStartupWaiter } from "./support/services.ts";

const log = logger("cli");

/** Adds `citizen-staking worker` to `program`; its description is its help text. */
export function addWorkerCommand(program: Command): void {
  program
    .command("worker")
    .description("run chunk workers only (add processes on more hosts to backfill faster)")
    .action(async () => {
      const chain = await resolveChainSettings(config);
      const untilReachable = createStartupWaiter();
      await untilReachable(() => checkServices({ database: "existing", chain }));
      const indexer = await untilReachable(() => openIndexer(chain, { metrics: true }));
      closeOnSignal(indexer.close, { log });
      await indexer.start({ follow: false });
      log.info(
        {
          queuePrefix: config.queuePrefix,
          concurrency: config.indexer.concurrency,
          staker: indexer.contracts.staker,
        },
        "worker taking chunk jobs",
      );
    });
}
