import type { Command } from "commander";
import { checkRange } from "../../lib/block-range.ts";
import { config } from "../../lib/config.ts";
import { logger } from "../../lib/log.ts";
import { closeOnSignal } from "../../lib/shutdown.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { backfillProgress, showProgress } from "../../ops/progress.ts";
import { blockNumber } from "./support/arguments.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices, migrate } from "./support/services.ts";

const log = logger("cli");

/** Adds `citizen-staking backfill` to `program`; its description is its help text. */
export function addBackfillCommand(program: Command): void {
  program
    .command("backfill")
    .description("index a block range through chunk jobs, with progress")
    .option(
      "--from <block>",
      "first block (default: the checkpoint, or the start block)",
      blockNumber,
    )
    .option("--to <block>", "last block (default: the finality boundary)", blockNumber)
    .option("--enqueue-only", "queue the chunks for other workers and exit")
    .action(async (options: { from?: bigint; to?: bigint; enqueueOnly?: boolean }) => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "may-create", redis: true, chain });
      await migrate();
      const indexer = await openIndexer(chain, { metrics: true });
      const startBlock = await chain.startBlock();
      const [checkpoint, { head, finalized }] = await Promise.all([
        indexer.store.checkpoint(),
        indexer.chainTip(),
      ]);
      // Blocks above the finality boundary are the follower's, indexed block by block.
      const range = {
        from: options.from ?? (checkpoint ? checkpoint.indexedBlock + 1n : startBlock),
        to: options.to ?? finalized,
      };
      if (options.from === undefined && options.to === undefined && range.from > range.to) {
        console.log(
          `nothing to backfill: indexed up to ${range.from - 1n}, finality boundary ${finalized}, head ${head}`,
        );
        return indexer.close();
      }
      try {
        checkRange(range, { startBlock, head });
      } catch (error) {
        await indexer.close();
        throw error;
      }
      // Taken before the chunks are queued: workers elsewhere may start on them at once.
      const progress = await backfillProgress(indexer, range.from, range.to);
      const { from, to, chunks } = await indexer.enqueueBackfill({ ...range, startBlock });
      // Before the line: a supervisor may signal as soon as it reads it.
      closeOnSignal(indexer.close, { log });
      log.info({ from: from.toString(), to: to.toString(), chunks }, "backfill queued");
      if (options.enqueueOnly) return indexer.close();
      await indexer.start({ follow: false });
      const result = await showProgress(indexer, progress);
      const before =
        progress.eventsBefore > 0 ? `; ${progress.eventsBefore} were indexed before` : "";
      console.log(
        `backfill done: ${result.events} events indexed in ${result.seconds.toFixed(1)} s (${result.rate} events/s), blocks ${from}..${to}${before}`,
      );
      console.log(rpcSummary(await indexer.metrics.rpcCalls(), result.events));
      await indexer.close();
    });
}

/** One line: the RPC calls this process made, by method, and per event indexed. */
function rpcSummary(calls: Record<string, number>, events: number): string {
  const entries = Object.entries(calls).sort(([, a], [, b]) => b - a);
  const total = entries.reduce((sum, [, count]) => sum + count, 0);
  const perEvent = events > 0 ? (total / events).toFixed(3) : "-";
  const byMethod = entries.map(([method, count]) => `${method} ${count}`).join(", ");
  return `RPC calls by this process: ${total} (${perEvent} per event)${byMethod ? `: ${byMethod}` : ""}`;
}
