import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { resolveChainSettings } from "../../ops/chain-settings.ts";
import { openIndexer } from "./support/open-indexer.ts";
import { checkServices } from "./support/services.ts";

/** Adds `citizen-staking read-failures` to `program`; its description is its help text. */
export function addReadFailuresCommand(program: Command): void {
  program
    .command("read-failures")
    .description(
      "citizens whose metadata could not be read (served with the name and image last read, or the fallback name when it never read), stakes whose Hand flag is inferred (the node had no trace API), and stakes whose configuration is inferred (reconfigured in the stake's block; no read explains its points)",
    )
    .option(
      "--retry",
      "read their metadata again at the head, and the inferred Hand flags from the node's call traces, and keep what now reads",
    )
    .action(async (options: { retry?: boolean }) => {
      const chain = await resolveChainSettings(config);
      await checkServices({ database: "existing", redis: true, chain });
      const indexer = await openIndexer(chain, { readOnly: !options.retry });
      if (options.retry) {
        const { fixed, still } = await indexer.retryReadFailures();
        console.log(`read again: ${fixed} fixed, ${still} still failing`);
        const hands = await indexer.settleInferredHandClaims();
        console.log(
          `Hand flags traced again: ${hands.settled} settled, ${hands.still} still inferred`,
        );
      }
      const rows = await indexer.store.readFailures();
      for (const row of rows) {
        const served =
          row.name === null && row.image === null
            ? "serves the fallback name"
            : `serves the name and image last read: ${JSON.stringify(row.name)}`;
        console.log(
          `s${row.season} #${row.citizenId}\t${row.read}\tblock ${row.blockNumber}\t${row.reason}\t${served}`,
        );
      }
      const inferred = await indexer.store.inferredHandClaims();
      for (const stake of inferred) {
        console.log(
          `s1 #${stake.citizenId}\thand flag\tblock ${stake.blockNumber}\tinferred (no call trace of ${stake.transactionHash}): vault.multiplier ${stake.vaultMultiplier} assumes no claim`,
        );
      }
      const configurations = await indexer.store.inferredConfigurations();
      for (const stake of configurations) {
        console.log(
          `s1 #${stake.citizenId}\tconfiguration\tblock ${stake.blockNumber}\tinferred (reconfigured in its block; neither end of the block nor a trace explains its points): ` +
            `identity.points ${stake.identityPoints} x vault.multiplier ${stake.vaultMultiplier} x timelock.multiplier ${stake.timelockMultiplier} / 10000 != ${stake.basePoints} base points; ` +
            `on a node with a prestate tracer, reindex --from ${stake.blockNumber} --to ${stake.blockNumber} reads it again`,
        );
      }
      if (rows.length === 0 && inferred.length === 0 && configurations.length === 0) {
        console.error("no recorded read failures, inferred Hand flags or inferred configurations");
      }
      await indexer.close();
    });
}
