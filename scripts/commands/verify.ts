import { type Command, InvalidArgumentError } from "commander";
import { ConfigError, config } from "../../lib/config.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { citizenStakers, NothingIndexed, verifyAtCheckpoint } from "../../ops/verify.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

/** Adds `citizen-staking verify` to `program`; its description is its help text. */
export function addVerifyCommand(program: Command): void {
  program
    .command("verify")
    .description(
      "compare the tables with the chain at one block they had reached: the indexed block, or the one below the node's head while the chain moves (the staker's views and the citizens' transfers into its escrow); exit 1 on any mismatch",
    )
    .option(
      "--sample <n>",
      "read the positions of a random sample of wallets instead of all",
      (value) => {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 1)
          throw new InvalidArgumentError("expected a positive whole number");
        return n;
      },
    )
    .action(async (options: { sample?: number }) => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "existing", redis: true, chain });
      const indexer = await openIndexer(chain, { readOnly: true });
      const wallets = options.sample
        ? (await citizenStakers(indexer.database.db))
            .sort(() => Math.random() - 0.5)
            .slice(0, options.sample)
        : undefined;
      // Chain and tables at one block the tables had reached, read in one snapshot, so what the
      // follower indexes meanwhile is no false alarm (verifyAtCheckpoint says how).
      const { at, mismatches } = await verifyAtCheckpoint({
        client: indexer.client,
        db: indexer.database.db,
        contracts: indexer.contracts,
        wallets,
        escrow: { from: await chain.startBlock(), maxLogRange: config.indexer.maxLogRange },
      }).catch((error: unknown) => {
        if (error instanceof NothingIndexed) throw new ConfigError(error.message);
        throw error;
      });
      for (const m of mismatches) {
        console.log(
          `${m.wallet} s${m.season} #${m.citizenId} ${m.field}: tables ${m.tables}, chain ${m.chain}`,
        );
      }
      const checked = wallets ? `${wallets.length} wallets` : "every wallet";
      console.log(
        `verified ${checked} and the staker's escrow at block ${at}: ${mismatches.length} mismatches`,
      );
      await indexer.close();
      process.exit(mismatches.length === 0 ? 0 : 1);
    });
}
