/**
 * The demo's node keeps only the block states its indexer reads (devnet/anvil.ts
 * demoKeptStates), so a demo left running stays small. Here a node kept as the demo keeps it is
 * followed, as the demo follows it (the node's finalized tag), through live activity well past
 * the states it keeps: the tables still equal the staker's views, and `status` still finds the
 * node fit, since what the indexer reads next is above the checkpoint, not at the start block.
 * How much memory that saves is measured, not tested (a size test would be a timed one): see
 * the commit that chose the setting.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { demoKeptStates } from "../../devnet/anvil.ts";
import { scenarioBlocks } from "../../devnet/scenario.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";

const EVENTS = 200;
const KEPT = demoKeptStates(scenarioBlocks(EVENTS).blocks);

describe("a node keeping the demo's states", () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer;

  beforeAll(async () => {
    // The demo's wallets, so its deployment spans the demo's blocks.
    devnet = await startScenarioDevnet({
      events: EVENTS,
      seed: "demo-node",
      wallets: 40,
      anvil: { pruneHistory: KEPT, keptTransactionBlocks: KEPT },
    });
    harness = await indexDevnet(devnet, {
      label: "demo_node",
      options: { followIntervalMs: 50, finalityDepth: undefined },
      follow: true,
    });
  });

  afterAll(async () => {
    await harness?.cleanup();
    await devnet?.stop();
  });

  test("is followed through live activity past the states it keeps, and status finds it fit", async () => {
    const until = devnet.deployment.deployBlock + BigInt(KEPT) + 20n;
    const stop = new AbortController();
    await devnet.scenario.live({
      intervalMs: 50,
      signal: stop.signal,
      onBlock: (progress) => {
        if (progress.block >= until) stop.abort();
      },
    });
    await harness.waitForHead();
    expect(await harness.mismatches()).toEqual([]);

    // The node did prune: the deployment's state is gone (anvil's words for it).
    await expect(
      devnet.client.readContract({
        address: devnet.deployment.addresses.staker,
        abi: stakerAbi,
        functionName: "S1_CITIZEN",
        blockNumber: devnet.deployment.deployBlock,
      }),
    ).rejects.toThrow(/BlockOutOfRange/);

    const status = await harness.cli(["status"]);
    expect({ code: status.code, stderr: status.stderr }).toEqual({ code: 0, stderr: "" });
    expect(status.stdout).toMatch(/^node {2,}ok$/m);
  });
});
