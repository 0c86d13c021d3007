import type { Command } from "commander";
import { enqueueRange } from "../../indexer/queues/queues.ts";
import { checkRange } from "../../lib/block-range.ts";
import { config } from "../../lib/config.ts";
import { logger } from "../../lib/log.ts";
import { closeOnSignal } from "../../lib/shutdown.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { reindexProgress, showProgress } from "../../ops/progress.ts";
import { blockNumber } from "./support/arguments.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

const log = logger("cli");

/** Adds `citizen-staking reindex` to `program`; its description is its help text. */
export function addReindexCommand(program: Command): void {
  program
    .command("reindex")
    .description(
      "fetch a block range again and rebuild what it touches, while the API keeps serving",
    )
    .requiredOption("--from <block>", "first block", blockNumber)
    .requiredOption("--to <block>", "last block", blockNumber)
    .option("--enqueue-only", "queue the chunks for other workers and exit")
    .action(async (options: { from: bigint; to: bigint; enqueueOnly?: boolean }) => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "existing", redis: true, chain });
      const indexer = await openIndexer(chain, { metrics: true });
      const [checkpoint, head, startBlock] = await Promise.all([
        indexer.store.checkpoint(),
        indexer.client.getBlockNumber(),
        chain.startBlock(),
      ]);
      try {
        checkRange(options, { startBlock, head, indexedBlock: checkpoint?.indexedBlock ?? null });
      } catch (error) {
        await indexer.close();
        throw error;
      }
      const requestedAt = Date.now();
      const { chunkSize } = config.indexer;
      const chunks = await enqueueRange(
        indexer.queues.chunks,
        options.from,
        options.to,
        chunkSize,
        true,
        requestedAt,
      );
      // Before the line: a supervisor may signal as soon as it reads it.
      closeOnSignal(indexer.close, { log });
      log.info(
        { from: options.from.toString(), to: options.to.toString(), chunks },
        "reindex queued",
      );
      if (options.enqueueOnly) return indexer.close();
      await indexer.start({ follow: false });
      const result = await showProgress(
        indexer,
        reindexProgress(indexer, { ...options, chunkSize, requestedAt }),
      );
      console.log(
        `reindex done: ${result.events} events indexed again in ${result.seconds.toFixed(1)} s (${result.rate} events/s), blocks ${options.from}..${options.to}`,
      );
      await indexer.close();
    });
}
