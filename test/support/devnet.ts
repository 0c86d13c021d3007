import { type AnvilOptions, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient } from "../../devnet/client.ts";
import { deployDevnet } from "../../devnet/deploy.ts";
import { Scenario } from "../../devnet/scenario.ts";

/**
 * Anvil with the contracts deployed and a seeded scenario run to `events` staker events, for files
 * that go on with the scenario (`scenario.live()`); a file that only reads the chain it leaves loads
 * it from the cache instead (startScenarioChain in scenario-chain.ts).
 */
export async function startScenarioDevnet(options: {
  events: number;
  seed?: string;
  wallets?: number;
  anvil?: AnvilOptions;
}) {
  const node = await startAnvil(options.anvil);
  const client = createDevnetClient(node.rpcUrl);
  const deployment = await deployDevnet(client);
  const scenario = await Scenario.prepare(client, deployment, {
    seed: options.seed ?? "test",
    wallets: options.wallets ?? Math.max(4, Math.round(options.events / 50)),
  });
  const progress = await scenario.run({ events: options.events });
  return { node, client, deployment, scenario, progress, stop: () => node.stop() };
}

export type ScenarioDevnet = Awaited<ReturnType<typeof startScenarioDevnet>>;
