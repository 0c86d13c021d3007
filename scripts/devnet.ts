#!/usr/bin/env bun
/**
 * The devnet: starts anvil (or attaches to --rpc-url), deploys and configures the contracts, writes
 * their addresses where the indexer looks, runs a seeded scenario and then keeps the node up
 * (optionally producing live activity) until interrupted.
 */
import { Command, InvalidArgumentError } from "commander";
import { type AnvilNode, startAnvil } from "../devnet/anvil.ts";
import { createDevnetClient } from "../devnet/client.ts";
import { deployDevnet, writeDeploymentFile } from "../devnet/deploy.ts";
import { Scenario } from "../devnet/scenario.ts";
import { config } from "../lib/config.ts";

function count(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number");
  return Number(value);
}

const options = new Command()
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
  .showHelpAfterError()
  .parse()
  .opts<{
    rpcUrl?: string;
    port: number;
    events: number;
    wallets?: number;
    seed: string;
    out: string;
    live?: number;
    exit?: boolean;
  }>();

const say = (line: string) => process.stderr.write(`devnet: ${line}\n`);

let node: AnvilNode | undefined;
if (!options.rpcUrl) {
  node = await startAnvil({ port: options.port });
  say(`anvil listening on ${node.rpcUrl}`);
}
const rpcUrl = options.rpcUrl ?? (node as AnvilNode).rpcUrl;
const client = createDevnetClient(rpcUrl);
const started = performance.now();
const deployment = await deployDevnet(client);
await writeDeploymentFile(options.out, deployment);
say(
  `contracts deployed; staker ${deployment.addresses.staker}; addresses written to ${options.out}`,
);

const scenario = await Scenario.prepare(client, deployment, {
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

const stop = new AbortController();
const shutdown = async () => {
  stop.abort();
  await node?.stop();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());

if (options.exit) {
  await node?.stop();
  process.exit(0);
}
if (options.live !== undefined) {
  say(`producing a block every ${options.live} ms; Ctrl-C stops`);
  await scenario.live({ intervalMs: options.live, signal: stop.signal });
} else {
  // Automine comes back on so wallets and tools can send transactions to the node by hand.
  await client.setAutomine(true);
  say(`node stays up at ${rpcUrl}; Ctrl-C stops it`);
}
