/**
 * A chunk reads its stakes at a later block (mostly its last) and keeps those reads only where
 * they prove the stake's own block. Here the chunk holds what breaks that shortcut: the owner
 * reconfiguring the points between two stakes, and citizens staked, withdrawn and re-staked.
 * Every stake's row is checked against the staker read at the stake's own block.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { type Address, encodeFunctionData, type Hex, numberToHex } from "viem";
import { neoTokyoStakerAbi, vaultAbi } from "../../contracts/generated/index.ts";
import { type CitizenStakeRow, citizenStakes } from "../../db/schema.ts";
import { DAY, STAKER_ASSET_ID } from "../../devnet/settings.ts";
import { stakeCalldata } from "../../devnet/staking-calls.ts";
import { fetchRange } from "../../indexer/fetch/fetch-range.ts";
import { verifyAgainstChain } from "../../ops/verify.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { startDevnetIndexer, type TestIndexer } from "../support/indexer.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { startRpcProxy } from "../support/rpc-proxy.ts";
import { stakingActions, type TransactionJson } from "../support/staking.ts";

/** One wallet per test: a test's stakes do not show in another's checks. */
const WALLET: Address = "0x00000000000000000000000000000000000c4a11";
const MOVER: Address = "0x00000000000000000000000000000000000c4a12";
const COUNTED: Address = "0x00000000000000000000000000000000000c4a13";
const SPARSE: Address = "0x00000000000000000000000000000000000c4a14";
const PINNED: Address = "0x00000000000000000000000000000000000c4a15";
const GAS = numberToHex(1_500_000n);
const E18 = 10n ** 18n;

describe("stakes read at a later block of their chunk", () => {
  let devnet: ScenarioDevnet;
  let actions: ReturnType<typeof stakingActions>;
  const harnesses: TestIndexer[] = [];
  const proxies: { stop(): unknown }[] = [];
  let nextId = 60_000n;

  const deployerTx = (to: Address, data: Hex): TransactionJson => ({
    from: devnet.deployment.deployer,
    to,
    data,
    gas: GAS,
  });
  const configure = (
    functionName: "configureIdentityCreditPoints" | "configureVaultCreditMultipliers",
    names: string[],
    values: bigint[],
  ) =>
    deployerTx(
      devnet.deployment.addresses.staker,
      encodeFunctionData({ abi: neoTokyoStakerAbi, functionName, args: [names, values] }),
    );
  const mintVault = (id: bigint, tier: string) =>
    deployerTx(
      devnet.deployment.addresses.vault,
      encodeFunctionData({ abi: vaultAbi, functionName: "mint", args: [WALLET, id, tier] }),
    );
  const stakeWithVault = (id: bigint, vaultId: bigint, optionId = 0) => ({
    from: WALLET,
    to: devnet.deployment.addresses.staker,
    data: stakeCalldata(STAKER_ASSET_ID.s1_citizen, optionId, id, vaultId, 0n),
    gas: GAS,
  });

  /** A fresh indexer that has indexed the devnet up to `to` in one chunk from the deploy block. */
  const indexedThrough = async (label: string, to: bigint) => {
    const harness = await startDevnetIndexer(devnet, label, { chunkSize: 100_000 });
    harnesses.push(harness);
    const backfill = await harness.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
      to,
    });
    expect(backfill.chunks).toBe(1);
    await harness.indexer.start({ follow: false });
    await harness.waitForBlock(to);
    return harness;
  };

  const rowsOf = (harness: TestIndexer, season: number, id: bigint) =>
    harness.indexer.database.db
      .select()
      .from(citizenStakes)
      .where(and(eq(citizenStakes.season, season), eq(citizenStakes.citizenId, id)))
      .orderBy(citizenStakes.blockNumber);

  /**
   * What the staker says at the stake's own block: the oracle for each row (these tests'
   * citizens have no component vault and no Hand).
   */
  const ownBlockFacts = async (row: CitizenStakeRow) => {
    const read = (functionName: string, args: unknown[]) =>
      devnet.client.readContract({
        address: devnet.deployment.addresses.staker,
        abi: neoTokyoStakerAbi,
        functionName: functionName as never,
        args: args as never,
        blockNumber: row.blockNumber,
      }) as Promise<never>;
    const staker = row.staker as Address;
    if (row.season === 2) {
      const [, timelockEndTime, points] = (await read("stakedS2", [staker, row.citizenId])) as [
        bigint,
        bigint,
        bigint,
      ];
      return { timelockEndTime, basePoints: points };
    }
    const [, timelockEndTime, points, stakedVaultId] = (await read("stakedS1", [
      staker,
      row.citizenId,
    ])) as [bigint, bigint, bigint, bigint, boolean];
    const creditYield = (await read("getCreditYield", [row.citizenId, 0n])) as string;
    return {
      timelockEndTime,
      basePoints: points,
      creditYield,
      identityPoints: (await read("identityCreditPoints", [creditYield])) as bigint,
      vaultMultiplier:
        stakedVaultId === 0n
          ? 100n
          : ((await read("getConfiguredVaultMultiplier", [stakedVaultId])) as bigint),
    };
  };
  const expectOwnBlockFacts = async (rows: CitizenStakeRow[]) => {
    for (const row of rows) {
      const facts = await ownBlockFacts(row);
      const stored = Object.fromEntries(
        Object.keys(facts).map((field) => [field, row[field as keyof CitizenStakeRow]]),
      );
      expect({ block: row.blockNumber, ...stored }).toEqual({ block: row.blockNumber, ...facts });
    }
  };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 100, seed: "chunk-reads" });
    actions = stakingActions(devnet.client, devnet.deployment);
    for (const wallet of [WALLET, MOVER, COUNTED, SPARSE, PINNED]) await actions.wallet(wallet);
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    for (const proxy of proxies) proxy.stop();
    await devnet?.stop();
  });

  test("the owner reconfigures the points between two stakes: each keeps its own block's", async () => {
    const [before, beforeVaulted, after, afterVaulted] = [nextId++, nextId++, nextId++, nextId++];
    await actions.mine([
      ...[before, beforeVaulted, after, afterVaulted].map((id) => actions.mintS1(WALLET, id)),
      mintVault(beforeVaulted, "High"),
      mintVault(afterVaulted, "High"),
    ]);
    const stakedFirst = await actions.mine([actions.stake(WALLET, 1, before)]);
    await actions.mine([stakeWithVault(beforeVaulted, beforeVaulted)]);
    await actions.mine([
      configure("configureIdentityCreditPoints", ["Mid"], [400n]),
      configure("configureVaultCreditMultipliers", ["High"], [250n]),
    ]);
    await actions.mine([actions.stake(WALLET, 1, after)]);
    const head = await actions.mine([stakeWithVault(afterVaulted, afterVaulted)]);
    // Put back as deployed, after the chunk's end, for the other tests.
    await actions.mine([
      configure("configureIdentityCreditPoints", ["Mid"], [200n]),
      configure("configureVaultCreditMultipliers", ["High"], [200n]),
    ]);

    const harness = await indexedThrough("chunk-reads-config", head);
    const rows = await Promise.all(
      [before, beforeVaulted, after, afterVaulted].map(
        async (id) => (await rowsOf(harness, 1, id))[0]!,
      ),
    );
    expect(rows.map((row) => [row.identityPoints, row.vaultMultiplier, row.basePoints])).toEqual([
      [200n, 100n, 200n],
      [200n, 200n, 400n],
      [400n, 100n, 400n],
      [400n, 250n, 1000n],
    ]);
    expect(rows[0]!.blockNumber).toBe(stakedFirst);
    await expectOwnBlockFacts(rows);
    expect(await harness.mismatches([WALLET])).toEqual([]);
  });

  test("citizens staked, withdrawn and re-staked in one chunk: each stake keeps its own entry", async () => {
    const [s1, s2] = [nextId++, nextId++];
    await actions.mine([actions.mintS1(MOVER, s1), actions.mintS2(MOVER, s2)]);
    await actions.mine([actions.stake(MOVER, 1, s1), actions.stake(MOVER, 2, s2)]);
    await actions.mine([
      actions.stakeBytes(MOVER, 1, s1, 11n * E18),
      actions.stakeBytes(MOVER, 2, s2, 5n * E18),
    ]);
    await devnet.client.increaseTime({ seconds: Number(31n * DAY) });
    const held = await actions.mine([]);
    await actions.mine([actions.withdraw(MOVER, 1, s1), actions.withdraw(MOVER, 2, s2)]);
    await actions.mine([actions.stake(MOVER, 1, s1, 1), actions.stake(MOVER, 2, s2, 1)]);
    const head = await actions.mine([actions.stakeBytes(MOVER, 1, s1, 7n * E18)]);

    const harness = await indexedThrough("chunk-reads-moves", head);
    const s1Rows = await rowsOf(harness, 1, s1);
    const s2Rows = await rowsOf(harness, 2, s2);
    expect(s1Rows.map((row) => row.basePoints)).toEqual([200n, 250n]);
    expect(s2Rows.map((row) => row.basePoints)).toEqual([100n, 125n]);
    await expectOwnBlockFacts([...s1Rows, ...s2Rows]);
    // The tables' history agrees with the staker while the first stakes were held, and now.
    for (const at of [held, head]) {
      const mismatches = await verifyAgainstChain({
        client: harness.indexer.client,
        db: harness.indexer.database.db,
        contracts: harness.indexer.contracts,
        at,
        wallets: [MOVER],
        asOf: true,
      });
      expect({ at, mismatches }).toEqual({ at, mismatches: [] });
    }
    expect(await harness.mismatches([MOVER])).toEqual([]);
  });

  test("a stake withdrawn after a block without staker logs is read at a block the fetch knows by hash", async () => {
    const id = nextId++;
    await actions.mine([actions.mintS1(PINNED, id)]);
    const from = await actions.mine([actions.stake(PINNED, 1, id)]);
    await devnet.client.increaseTime({ seconds: Number(31n * DAY) });
    // The block before the withdraw holds no staker log: the stake is held through it, but the
    // fetch knows no hash of it.
    await actions.mine([]);
    const to = await actions.mine([actions.withdraw(PINNED, 1, id)]);

    const node = startLyingNode(devnet.node.rpcUrl);
    proxies.push(node);
    const harness = await startDevnetIndexer(devnet, "chunk-reads-pinned");
    harnesses.push(harness);
    const indexer = await harness.open({ rpcUrl: node.url });
    const write = await fetchRange(indexer.deps, { from, to });
    expect(write.stakes.map((stake) => stake.citizenId)).toEqual([id]);
    expect(node.counts.byHash).toBeGreaterThan(0);
    expect(node.counts.byNumber).toBe(0);
    await expectOwnBlockFacts(write.stakes);
  });

  test("stakes in many blocks of one chunk cost a constant number of eth_calls", async () => {
    const ids = Array.from({ length: 8 }, () => nextId++);
    await actions.mine(ids.map((id, i) => (i % 2 ? actions.mintS2 : actions.mintS1)(COUNTED, id)));
    const blocks: bigint[] = [];
    for (const [i, id] of ids.entries()) {
      blocks.push(await actions.mine([actions.stake(COUNTED, i % 2 ? 2 : 1, id, i % 3)]));
    }
    const range = { from: blocks[0]!, to: blocks.at(-1)! };

    // A node that sends each log's block time, and one that does not (its headers are read).
    const proxy = startRpcFaultProxy({
      upstream: devnet.node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      logsWithoutTimestamps: true,
    });
    proxies.push(proxy);
    for (const [label, rpcUrl, headers] of [
      ["chunk-reads-count", devnet.node.rpcUrl, 0],
      // The chunk's first and last blocks hold a stake each: their headers are read anyway.
      ["chunk-reads-headers", proxy.url, ids.length - 2],
    ] as const) {
      const harness = await startDevnetIndexer(devnet, label);
      harnesses.push(harness);
      const indexer =
        rpcUrl === devnet.node.rpcUrl ? harness.indexer : await harness.open({ rpcUrl });
      // The first fetch reads the new citizens; the second finds them in the process's cache,
      // so what it calls is the stakes' reads alone.
      await fetchRange(indexer.deps, range);
      const before = await indexer.metrics.rpcCalls();
      const write = await fetchRange(indexer.deps, range);
      const after = await indexer.metrics.rpcCalls();
      const made = (method: string) => (after[method] ?? 0) - (before[method] ?? 0);
      expect(write.stakes).toHaveLength(ids.length);
      // Two dependent rounds of one multicall each, at the chunk's last block; at their own
      // blocks these stakes took one (S2) or two (S1) eth_calls each.
      expect({ label, ethCalls: made("eth_call") }).toEqual({ label, ethCalls: 2 });
      // The staker's logs, and the Transfers of its tokens (the missing-log check): every
      // stake's escrow is matched by its Stake log, so no block is asked again.
      expect({ label, getLogs: made("eth_getLogs") }).toEqual({ label, getLogs: 2 });
      // The two headers of the chunk's ends, the last one again, and those of the stakes' blocks
      // when the logs do not carry their time.
      expect({ label, headers: made("eth_getBlockByNumber") }).toEqual({
        label,
        headers: 3 + headers,
      });
      await expectOwnBlockFacts(write.stakes);
    }
  });

  test("a sparse 2,000-block chunk reads its ends' headers and a few eth_getLogs, not a header a block", async () => {
    const ids = Array.from({ length: 4 }, () => nextId++);
    const from = await actions.mine(ids.map((id) => actions.mintS1(SPARSE, id)));
    // Four stakes spread over 2,000 blocks, a withdraw-free stretch of empty blocks between.
    for (const id of ids) {
      await devnet.client.mine({ blocks: 400 });
      await actions.mine([actions.stake(SPARSE, 1, id)]);
    }
    const head = await devnet.client.getBlockNumber();
    const to = from + 1_999n;
    await devnet.client.mine({ blocks: Number(to - head) });

    const proxy = startRpcProxy(devnet.node.rpcUrl, { delayMs: 0 });
    const harness = await startDevnetIndexer(devnet, "chunk-reads-sparse");
    harnesses.push(harness);
    try {
      const indexer = await harness.open({ rpcUrl: proxy.url });
      const write = await fetchRange(indexer.deps, { from, to });
      const { callsByMethod } = proxy.tally();
      expect(write.stakes.map((stake) => stake.citizenId)).toEqual(ids);
      expect(write.logCheck.askedAgain).toBe(0);
      // Both ends, and the last again (anvil's logs carry their block's time).
      expect(callsByMethod.eth_getBlockByNumber).toBe(3);
      // The staker's logs and the Transfers of its tokens: one span each.
      expect(callsByMethod.eth_getLogs).toBe(2);

      // A provider capped at 500 blocks a query: both are split into the governor's spans.
      const capped = await harness.open({ rpcUrl: proxy.url, maxLogRange: 500 });
      proxy.reset();
      const again = await fetchRange(capped.deps, { from, to });
      expect(again.events).toEqual(write.events);
      expect(proxy.tally().callsByMethod.eth_getLogs).toBe(2 * 4);
    } finally {
      await proxy.stop();
    }
    // Mining 2,000 blocks takes most of the default 5 s on a loaded machine.
  }, 60_000);
});
