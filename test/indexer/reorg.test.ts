import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq, min } from "drizzle-orm";
import type { Address } from "viem";
import { indexerCheckpoints, stakedCitizens, stakerEvents } from "../../db/schema.ts";
import { DAY } from "../../devnet/settings.ts";
import { verifyAgainstChain } from "../../ops/verify.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";

const WALLET: Address = "0x00000000000000000000000000000000000a11ce";

describe("reorgs while following the head", () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer;
  let actions: ReturnType<typeof stakingActions>;

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 2_000, seed: "reorg" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
    harness = await indexDevnet(devnet, {
      label: "reorg",
      options: { followIntervalMs: 50, finalityDepth: undefined },
      follow: true,
    });
  });

  afterAll(async () => {
    await harness?.cleanup();
    await devnet?.stop();
  });

  const stakedRow = async (season: number, id: bigint) =>
    harness.indexer.database.db
      .select()
      .from(stakedCitizens)
      .where(and(eq(stakedCitizens.season, season), eq(stakedCitizens.citizenId, id)));

  for (let depth = 1; depth <= 10; depth++) {
    test(`a reorg ${depth} deep that removes a stake leaves the citizen unstaked`, async () => {
      const id = 10_000n + BigInt(depth);
      await actions.mine([actions.mintS1(WALLET, id)]);
      await actions.mine([actions.stake(WALLET, 1, id)]);
      for (let extra = 1; extra < depth; extra++) {
        await actions.mine(
          extra === depth - 1 ? [actions.stakeBytes(WALLET, 1, id, 150n * 10n ** 18n)] : [],
        );
      }
      await harness.waitForHead();
      expect(await stakedRow(1, id)).toHaveLength(1);

      await actions.reorg(depth);
      await actions.mine([]);
      await harness.waitForHead();
      expect(await stakedRow(1, id)).toHaveLength(0);
      expect(await harness.mismatches([WALLET])).toEqual([]);
    });

    test(`a reorg ${depth} deep that moves a withdraw to a later block`, async () => {
      const id = 20_000n + BigInt(depth);
      await actions.mine([actions.mintS2(WALLET, id)]);
      await actions.mine([
        actions.stake(WALLET, 2, id),
        actions.stakeBytes(WALLET, 2, id, 3n * 10n ** 18n),
      ]);
      // Time travels in a block of its own below the reorg: anvil stamps replacement blocks
      // from their parent, so the timelock must already be over there.
      await devnet.client.increaseTime({ seconds: Number(31n * DAY) });
      await actions.mine([]);
      const withdrawal = actions.withdraw(WALLET, 2, id);
      const withdrawnAt = await actions.mine([withdrawal]);
      for (let extra = 1; extra < depth; extra++) await actions.mine([]);
      await harness.waitForHead();
      expect(await stakedRow(2, id)).toHaveLength(0);

      // The replacement branch holds the same withdrawal in its last block (the first when depth is 1).
      await actions.reorg(depth, [[withdrawal, depth - 1]]);
      await harness.waitForHead();
      const withdrawals = await harness.indexer.database.db
        .select({ block: stakerEvents.blockNumber })
        .from(stakerEvents)
        .where(and(eq(stakerEvents.event, "Withdraw"), eq(stakerEvents.citizenId, id)));
      expect(withdrawals).toEqual([{ block: withdrawnAt + BigInt(depth - 1) }]);
      expect(await stakedRow(2, id)).toHaveLength(0);
      expect(await harness.mismatches([WALLET])).toEqual([]);
    });
  }

  test("after every reorg, all wallets still match the staker's views", async () => {
    expect(await harness.mismatches()).toEqual([]);
  });

  test("after every reorg, the history matches the staker's views at each block the reorgs rewrote", async () => {
    const db = harness.indexer.database.db;
    const [checkpoint] = await db.select().from(indexerCheckpoints);
    const [first] = await db
      .select({ block: min(stakerEvents.blockNumber) })
      .from(stakerEvents)
      .where(eq(stakerEvents.account, WALLET));
    // Every block since the wallet's first event: all the reorgs above happened there. Four
    // blocks at a time: each check is the node's views at an old block, slow one by one.
    const blocks: bigint[] = [];
    for (let at = first!.block! - 1n; at <= checkpoint!.indexedBlock; at++) blocks.push(at);
    for (let start = 0; start < blocks.length; start += 4) {
      const checked = await Promise.all(
        blocks.slice(start, start + 4).map(async (at) => ({
          at,
          mismatches: await verifyAgainstChain({
            client: harness.indexer.client,
            db,
            contracts: harness.indexer.contracts,
            at,
            wallets: [WALLET],
            asOf: true,
          }),
        })),
      );
      for (const { at, mismatches } of checked)
        expect({ at, mismatches }).toEqual({ at, mismatches: [] });
    }
    expect(blocks.length).toBeGreaterThan(20);
  });
});
