/**
 * An operator who points RPC_URL at a full node (state kept for the last 128 blocks) hears it at
 * start-up, in one line naming the block, instead of from the first chunk's failed reads. The
 * provider-shaped node plays each client's full node, in its own words.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isPrunedState } from "../../indexer/chain/pruned-state.ts";
import { checkChainSettings } from "../../ops/chain-settings.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runCommand } from "../support/commands.ts";
import { type ProviderNode, startProviderNode } from "../support/provider-node.ts";
import { PRUNED_STATE } from "../support/provider-wordings.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("full-node");
const nodes: ProviderNode[] = [];

beforeAll(async () => {
  [devnet, database] = await Promise.all([
    startScenarioChain({ events: 30, seed: "full-node" }),
    createScratchDatabase("full_node"),
  ]);
  // The deploy block falls out of a full node's last 128 states (empty blocks: cheap for anvil).
  await devnet.client.request({ method: "anvil_mine", params: ["0x90", "0x0"] } as never);
});

afterAll(async () => {
  for (const node of nodes) node.stop();
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

const settingsThrough = (rpcUrl: string) => ({
  RPC_URL: rpcUrl,
  STAKER_ADDRESS: devnet.deployment.addresses.staker,
  START_BLOCK: String(devnet.deployment.deployBlock),
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  CHAIN_ID: undefined,
  LOG_LEVEL: "warn",
});

describe("a full node at RPC_URL", () => {
  for (const wording of PRUNED_STATE) {
    test(`${wording.client}: refused at start-up in one line, exit 2`, async () => {
      const node = startProviderNode(devnet.node.rpcUrl, {
        fullNode: { keepBlocks: 128, client: wording.client },
      });
      nodes.push(node);
      const result = await runCommand(["scripts/cli.ts", "status"], settingsThrough(node.url));
      const stderr = result.stderr.trim();
      expect({ code: result.code, lines: stderr.split("\n").length }).toEqual({
        code: 2,
        lines: 1,
      });
      expect(stderr).toStartWith(
        `error: RPC_URL does not serve state at block ${devnet.deployment.deployBlock}: an archive node is needed because`,
      );
      expect(node.stats().prunedReads).toBeGreaterThan(0);
    });
  }

  test("the same node keeping every state (an archive node) passes the check", async () => {
    const node = startProviderNode(devnet.node.rpcUrl, {});
    nodes.push(node);
    await expect(
      checkChainSettings({
        rpcUrl: node.url,
        rpcSource: "RPC_URL",
        stakerSource: "STAKER_ADDRESS",
        staker: devnet.deployment.addresses.staker,
        startBlock: async () => devnet.deployment.deployBlock,
      }),
    ).resolves.toBe(31337);
  });

  test("each client's words are read as pruned state, and a revert is not", () => {
    for (const wording of PRUNED_STATE) {
      const error = new Error(
        wording.message({ number: 17_000_000n, stateRoot: `0x${"ab".repeat(32)}` }),
      );
      expect({ client: wording.client, pruned: isPrunedState(error) }).toEqual({
        client: wording.client,
        pruned: true,
      });
    }
    expect(isPrunedState(new Error("execution reverted"))).toBe(false);
    expect(isPrunedState(new Error("header not found"))).toBe(false);
  });
});
