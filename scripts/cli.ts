#!/usr/bin/env bun
/**
 * The operator's command line: migrate, backfill, follow, reindex, status, verify, board, tokens,
 * and the API (`api`), so one compiled binary runs the whole system. Each command lives in its
 * own file under `scripts/commands/`; this file only assembles them, in the order `--help` lists.
 */
import { Command, CommanderError } from "commander";
import { ChainMismatch } from "../indexer/chain/chain-id.ts";
import { BackfillLeavesGap, RangeAboveFinality } from "../indexer/roles/backfill-queue.ts";
import { failAndExit } from "../lib/fail.ts";
import { addApiCommand } from "./commands/api.ts";
import { addBackfillCommand } from "./commands/backfill.ts";
import { addBoardCommand } from "./commands/board.ts";
import { addFollowCommand } from "./commands/follow.ts";
import { addHealthcheckCommand } from "./commands/healthcheck.ts";
import { addMigrateCommand } from "./commands/migrate.ts";
import { addReadFailuresCommand } from "./commands/read-failures.ts";
import { addRefreshMetadataCommand } from "./commands/refresh-metadata.ts";
import { addReindexCommand } from "./commands/reindex.ts";
import { addReprojectCommand } from "./commands/reproject.ts";
import { addRollbackCommand } from "./commands/rollback.ts";
import { addStatusCommand } from "./commands/status.ts";
import { addTokenCommand } from "./commands/token.ts";
import { addVerifyCommand } from "./commands/verify.ts";
import { addWorkerCommand } from "./commands/worker.ts";

const program = new Command()
  .name("citizen-staking")
  .description("Operate the citizen-staking indexer and API")
  .showHelpAfterError("(add --help for usage)")
  // Usage errors end in the catch below, so that bad input exits 2 like every other refusal.
  // Set before the commands are added: `program.command()` copies them into each.
  .exitOverride();

for (const add of [
  addMigrateCommand,
  addFollowCommand,
  addWorkerCommand,
  addBackfillCommand,
  addReindexCommand,
  addStatusCommand,
  addReprojectCommand,
  addRollbackCommand,
  addReadFailuresCommand,
  addRefreshMetadataCommand,
  addVerifyCommand,
  addBoardCommand,
  addApiCommand,
  addHealthcheckCommand,
  addTokenCommand,
]) {
  add(program);
}

program.parseAsync().catch((error: unknown) => {
  // Commander has printed the usage error (or the help) already.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  failAndExit(error, [BackfillLeavesGap, ChainMismatch, RangeAboveFinality]);
});
