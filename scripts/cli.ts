#!/usr/bin/env bun
/**
 * The operator's command line: migrate, backfill, follow, reindex, status, verify, board, tokens,
 * and the API (`api`), so one compiled binary runs the whole system. Each command lives in its
 * own file under `scripts/commands/`; this file only assembles them, in the order `--help` lists.
 */
import { Command, CommanderError } from "commander";
import { ChainMismatch } from "../indexer/chain/chain-id.ts";
import { BackfillLeavesGap, RangeAboveFinality } from "../indexer/operator/backfill-queue.ts";
import { surviveDroppedConnections } from "../lib/dropped-connections.ts";
import { failAndExit } from "../lib/fail.ts";
import { exitOnSignal } from "../lib/shutdown.ts";

/**
 * The commands that run until stopped: SIGTERM or SIGINT ends them with 0 from their first
 * moment, also while they still wait for services (lib/shutdown.ts), and a connection dropped
 * where nothing awaits it does not end them (lib/dropped-connections.ts).
 */
const LONG_RUNNING = new Set(["follow", "worker", "backfill", "reindex", "board", "api"]);
if (LONG_RUNNING.has(process.argv[2] ?? "")) {
  exitOnSignal();
  surviveDroppedConnections();
}

const program = new Command()
  .name("citizen-staking")
  .description("Operate the citizen-staking indexer and API")
  .showHelpAfterError("(add --help for usage)")
  // Usage errors end in the catch below, so that bad input exits 2 like every other refusal.
  // Set before the commands are added: `program.command()` copies them into each.
  .exitOverride();

/**
 * Each command's module, in the order `--help` lists them, loaded only when that command runs
 * (all of them for `--help` or a name that is none of these). A `worker` then loads neither the
 * API (Elysia, OpenAPI, bull-board) nor the other commands' code, which had each worker process
 * hold 17 MB more once connected (peak 21 MB more while starting) and spend about 0.5 s more CPU
 * before its first job.
 */
const COMMANDS: Record<string, () => Promise<(program: Command) => void>> = {
  migrate: async () => (await import("./commands/migrate.ts")).addMigrateCommand,
  follow: async () => (await import("./commands/follow.ts")).addFollowCommand,
  worker: async () => (await import("./commands/worker.ts")).addWorkerCommand,
  backfill: async () => (await import("./commands/backfill.ts")).addBackfillCommand,
  reindex: async () => (await import("./commands/reindex.ts")).addReindexCommand,
  status: async () => (await import("./commands/status.ts")).addStatusCommand,
  reproject: async () => (await import("./commands/reproject.ts")).addReprojectCommand,
  rollback: async () => (await import("./commands/rollback.ts")).addRollbackCommand,
  "read-failures": async () => (await import("./commands/read-failures.ts")).addReadFailuresCommand,
  "refresh-metadata": async () =>
    (await import("./commands/refresh-metadata.ts")).addRefreshMetadataCommand,
  verify: async () => (await import("./commands/verify.ts")).addVerifyCommand,
  board: async () => (await import("./commands/board.ts")).addBoardCommand,
  api: async () => (await import("./commands/api.ts")).addApiCommand,
  healthcheck: async () => (await import("./commands/healthcheck.ts")).addHealthcheckCommand,
  token: async () => (await import("./commands/token.ts")).addTokenCommand,
};

const named = Object.hasOwn(COMMANDS, process.argv[2] ?? "")
  ? COMMANDS[process.argv[2]!]
  : undefined;
for (const load of named ? [named] : Object.values(COMMANDS)) {
  (await load())(program);
}

program.parseAsync().catch((error: unknown) => {
  // Commander has printed the usage error (or the help) already.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  failAndExit(error, [BackfillLeavesGap, ChainMismatch, RangeAboveFinality]);
});
