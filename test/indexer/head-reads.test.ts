/**
 * A node that answers a read at its head from the block it mines next, as anvil does when the
 * read meets its mining (the new state is published before the new number, by hash too): a
 * follower at the head reads a stake at the stake's own block, and must not count the next
 * block's BYTES deposit into that stake's points. The race that live activity on a loaded
 * machine opens now and then, opened here on purpose.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Address, parseEther } from "viem";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { stakingActions } from "../support/staking.ts";

const WALLET: Address = "0x000000000000000000000000000000000000bead";
const S1 = 72_001n;
const S2 = 72_002n;

describe("a follower on a node that answers reads at its head from the next block", () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer;
  let node: ReturnType<typeof startLyingNode>;
  let actions: ReturnType<typeof stakingActions>;

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 40, seed: "head-reads" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
    await actions.mine([actions.mintS1(WALLET, S1), actions.mintS2(WALLET, S2)]);
    node = startLyingNode(devnet.node.rpcUrl);
    harness = await indexDevnet(devnet, {
      label: "head_reads",
      rpcUrl: node.url,
      options: { followIntervalMs: 20 },
      follow: true,
    });
  });

  afterAll(async () => {
    await harness?.cleanup();
    node?.stop();
    await devnet?.stop();
  });

  test("writes each stake's points as its own block left them", async () => {
    // The next block's number is published 400 ms after its state, as on a loaded machine.
    node.answerHeadReadsLate({ publishMs: 400 });
    await actions.mine([actions.stake(WALLET, 1, S1, 2), actions.stake(WALLET, 2, S2, 2)]);
    // The follower's reads at the stakes' block wait at the node until a block follows it...
    while (node.counts.heldHeadReads === 0) await Bun.sleep(10);
    // ...and are answered from that block, which deposits BYTES into both stakes.
    await actions.mine([
      actions.stakeBytes(WALLET, 1, S1, parseEther("100")),
      actions.stakeBytes(WALLET, 2, S2, parseEther("100")),
    ]);
    await devnet.client.mine({ blocks: 1 });
    await harness.waitForHead();
    expect(node.counts.lateHeadReads).toBeGreaterThan(0);
    // The check's own reads at the head are answered as they are.
    node.answerHeadReadsLate(false);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  }, 60_000);
});
