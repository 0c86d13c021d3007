import { type Command, InvalidArgumentError } from "commander";
import { ConfigError, config } from "../../lib/config.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { citizenStakers, verifyAgainstChain } from "../../ops/verify.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

/** Adds `citizen-staking verify` to `program`; its description is its help text. */
export function addVerifyCommand(program: Command): void {
  program
    .command("verify")
    .description(
      "compare the tables with the chain at the indexed block (the staker's views and the citizens' transfers into its escrow); exit 1 on any mismatch",
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
      const checkpoint = await indexer.store.checkpoint();
      if (!checkpoint) throw new ConfigError("nothing indexed yet");
      const wallets = options.sample
        ? (await citizenStakers(indexer.database.db))
            .sort(() => Math.random() - 0.5)
            .slice(0, options.sample)
        : undefined;
      // Chain and tables at one block: the tables as they stood after it (staked_citizens_at),
      // so what the follower indexes meanwhile is no false alarm.
      const mismatches = await verifyAgainstChain({
        client: indexer.client,
        db: indexer.database.db,
        contracts: indexer.contracts,
        at: checkpoint.indexedBlock,
        wallets,
        asOf: true,
        escrow: { from: await chain.startBlock(), maxLogRange: config.indexer.maxLogRange },
      });
      for (const m of mismatches) {
        console.log(
          `${m.wallet} s${m.season} #${m.citizenId} ${m.field}: tables ${m.tables}, chain ${m.chain}`,
        );
      }
      const checked = wallets ? `${wallets.length} wallets` : "every wallet";
      console.log(
        `verified ${checked} and the staker's escrow at block ${checkpoint.indexedBlock}: ${mismatches.length} mismatches`,
      );
      await indexer.close();
      process.exit(mismatches.length === 0 ? 0 : 1);
    });
}
