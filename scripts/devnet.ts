#!/usr/bin/env bun
/**
 * The devnet: starts anvil (or attaches to --rpc-url), deploys and configures the contracts, writes
 * their addresses where the indexer looks, runs a seeded scenario and then keeps the node up
 * (optionally producing live activity) until interrupted.
 *
 * --dump-state FILE saves the chain when the node stops; --load-state FILE starts from a saved
 * chain instead of deploying. The devnet description travels beside the state (FILE.devnet.json),
 * so a reload describes the chain it loaded even if another devnet wrote DEVNET_FILE meanwhile.
 */
import { existsSync } from "node:fs";
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { type AnvilNode, AnvilPortInUse, startAnvil } from "../devnet/anvil.ts";
import { createDevnetClient } from "../devnet/client.ts";
import {
  type DevnetDeployment,
  deployDevnet,
  readDeploymentFile,
  writeDeploymentFile,
} from "../devnet/deploy.ts";
import { Scenario } from "../devnet/scenario.ts";
import { config } from "../lib/config.ts";
import { failAndExit, Refused } from "../lib/fail.ts";

function count(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
}

/** Where the description of a saved chain is kept: beside the state file. */
const descriptionBeside = (stateFile: string) => `${stateFile}.devnet.json`;

const program = new Command()
  .name("devnet")
  .description("Run a local Neo Tokyo staking devnet with a seeded scenario")
  .option("--rpc-url <url>", "attach to this node instead of starting anvil")
  .option("--port <port>", "port for the anvil it starts", count, 8545)
  .option("--events <n>", "staker events the scenario emits", count, 1_000)
  .option("--wallets <n>", "wallets taking part (default: one per 50 events)", count)
  .option("--seed <seed>", "scenario seed", "citizen-staking")
  .option("--out <file>", "where to write the deployment", config.chain.devnetFile)
  .option("--live <ms>", "after the scenario, mine a block of activity every <ms>", count)
  .option("--exit", "exit after the scenario instead of keeping the node up")
  .option("--dump-state <file>", "save the chain to <file> when the node stops (Ctrl-C, --exit)")
  .option(
    "--load-state <file>",
    "start from a chain saved with --dump-state instead of deploying and running a scenario",
  )
  .showHelpAfterError("(add --help for usage)")
  .exitOverride();

let node: AnvilNode | undefined;

try {
  program.parse();
  await run(
    program.opts<{
      rpcUrl?: string;
      port: number;
      events: number;
      wallets?: number;
      seed: string;
      out: string;
      live?: number;
      exit?: boolean;
      dumpState?: string;
      loadState?: string;
    }>(),
  );
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  await node?.stop();
  // A taken --port is refused, not adopted: whatever answers there is not our node.
  failAndExit(error, [AnvilPortInUse]);
}

async function run(options: {
  rpcUrl?: string;
  port: number;
  events: number;
  wallets?: number;
  seed: string;
  out: string;
  live?: number;
  exit?: boolean;
  dumpState?: string;
  loadState?: string;
}) {
  const say = (line: string) => process.stderr.write(`devnet: ${line}\n`);
  if (options.rpcUrl && (options.dumpState || options.loadState)) {
    throw new Refused(
      "--dump-state and --load-state need the anvil this command starts, not --rpc-url",
    );
  }
  if (options.loadState) {
    const scenarioFlags = ["events", "wallets", "seed", "live"].filter(
      (name) => program.getOptionValueSource(name) === "cli",
    );
    if (scenarioFlags.length > 0) {
      throw new Refused(
        `--load-state starts the saved chain as it was; drop --${scenarioFlags.join(", --")}`,
      );
    }
  }

  // Read before anvil starts: a state without its description is refused at once.
  const saved = options.loadState ? await savedDescription(options.loadState) : undefined;
  if (!options.rpcUrl) {
    node = await startAnvil({
      port: options.port,
      dumpStateTo: options.dumpState,
      loadStateFrom: options.loadState,
    });
    say(`anvil listening on ${node.rpcUrl}`);
  }
  const rpcUrl = options.rpcUrl ?? (node as AnvilNode).rpcUrl;
  const client = createDevnetClient(rpcUrl);

  let scenario: Scenario | undefined;
  if (options.loadState && saved) {
    const deployment = await reloadedDeployment(options.loadState, saved, rpcUrl);
    await writeDeploymentFile(options.out, deployment);
    if (options.dumpState)
      await writeDeploymentFile(descriptionBeside(options.dumpState), deployment);
    say(
      `state loaded from ${options.loadState} (head ${await client.getBlockNumber()}); staker ${deployment.addresses.staker}; addresses written to ${options.out}`,
    );
  } else {
    const started = performance.now();
    const deployment = await deployDevnet(client);
    await writeDeploymentFile(options.out, deployment);
    if (options.dumpState)
      await writeDeploymentFile(descriptionBeside(options.dumpState), deployment);
    say(
      `contracts deployed; staker ${deployment.addresses.staker}; addresses written to ${options.out}`,
    );
    scenario = await Scenario.prepare(client, deployment, {
      seed: options.seed,
      wallets: options.wallets ?? Math.max(4, Math.round(options.events / 50)),
    });
    let lastReport = 0;
    const progress = await scenario.run({
      events: options.events,
      onBlock: (step) => {
        if (performance.now() - lastReport < 1_000) return;
        lastReport = performance.now();
        say(`block ${step.block}: ${step.stakerEvents}/${step.targetEvents} staker events`);
      },
    });
    const seconds = ((performance.now() - started) / 1_000).toFixed(1);
    say(
      `scenario "${options.seed}": ${progress.stakerEvents} staker events in ${progress.transactions} ` +
        `transactions over ${progress.blocks} blocks (head ${progress.block}), ${seconds} s`,
    );
  }

  const stop = new AbortController();
  const shutdown = async () => {
    stop.abort();
    if (options.dumpState) say(`saving the chain to ${options.dumpState}`);
    await node?.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown());
  process.on("SIGTERM", () => void shutdown());

  if (options.exit) return shutdown();
  if (options.live !== undefined && scenario) {
    say(`producing a block every ${options.live} ms; Ctrl-C stops`);
    await scenario.live({ intervalMs: options.live, signal: stop.signal });
  } else {
    // Automine comes back on so wallets and tools can send transactions to the node by hand.
    await client.setAutomine(true);
    say(`node stays up at ${rpcUrl}; Ctrl-C stops it`);
  }
}

async function savedDescription(stateFile: string): Promise<DevnetDeployment> {
  if (!existsSync(stateFile)) throw new Refused(`--load-state ${stateFile}: no such file`);
  return readDeploymentFile(descriptionBeside(stateFile)).catch((error: Error) => {
    throw new Refused(
      `--load-state ${stateFile}: no devnet description beside it (${descriptionBeside(stateFile)}, written by --dump-state): ${error.message}`,
    );
  });
}

/**
 * The description saved beside the state, checked against the loaded chain and pointed at the
 * node now serving it (its port may differ from the saved run's).
 */
async function reloadedDeployment(
  stateFile: string,
  saved: DevnetDeployment,
  rpcUrl: string,
): Promise<DevnetDeployment> {
  const client = createDevnetClient(rpcUrl);
  const [chainId, code, head] = await Promise.all([
    client.getChainId(),
    client.getCode({ address: saved.addresses.staker }),
    client.getBlockNumber(),
  ]);
  if (chainId !== saved.chainId || !code || code === "0x" || head < saved.deployBlock) {
    throw new Refused(
      `--load-state ${stateFile}: the loaded chain has no staker at ${saved.addresses.staker} (chain ${chainId}, head ${head}); the state and its description do not match`,
    );
  }
  return { ...saved, rpcUrl };
}
