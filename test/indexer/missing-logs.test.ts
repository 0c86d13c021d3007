import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { type Address, encodeFunctionData, getAddress, parseEther, parseEventLogs } from "viem";
import { bytesTokenAbi, s1CitizenAbi } from "../../contracts/generated/index.ts";
import { mainnetStakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { mayHoldStakerLogs } from "../../indexer/chain/log-bloom.ts";
import { STAKER_EVENTS } from "../../indexer/chain/staker-log-decoder.ts";
import { fetchRange } from "../../indexer/jobs/fetch-range.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import {
  indexDevnet,
  startDevnetIndexer,
  startTestIndexer,
  type TestIndexer,
} from "../support/indexer.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { stakingActions } from "../support/staking.ts";

/** The wallet that sends the staker tokens without staking them. */
const SENDER: Address = "0x00000000000000000000000000000000000c4a21";
/** The wallet whose block's answer keeps one Stake and drops the other. */
const PARTIAL: Address = "0x00000000000000000000000000000000000c4a22";
/** A wallet trading the staker's tokens with another, never with the staker. */
const TRADER: Address = "0x00000000000000000000000000000000000c4a23";
const BUYER: Address = "0x00000000000000000000000000000000000c4a24";

describe("a getLogs answer that leaves out one block's staker logs", () => {
  let devnet: ScenarioDevnet;
  let stakerLogs: ReturnType<typeof parseEventLogs<typeof mainnetStakerAbi>>;
  const harnesses: TestIndexer[] = [];
  const nodes: ReturnType<typeof startLyingNode>[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 300, seed: "missing-logs" });
    const raw = await devnet.client.getLogs({
      address: devnet.deployment.addresses.staker,
      fromBlock: devnet.deployment.deployBlock,
    });
    stakerLogs = parseEventLogs({ abi: mainnetStakerAbi, logs: raw });
  });

  // Five indexers' databases and Redis prefixes to remove, and the devnet: more than the
  // default 5 s on a loaded machine.
  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    for (const node of nodes) node.stop();
    await devnet?.stop();
  }, 60_000);

  /** The last block holding a citizen Stake: the one whose logs the node leaves out. */
  const lastCitizenStakeBlock = () => {
    const { s1Citizen, s2Citizen } = devnet.deployment.addresses;
    const citizens = new Set([getAddress(s1Citizen), getAddress(s2Citizen)]);
    const stakes = stakerLogs.filter(
      (log) => log.eventName === "Stake" && citizens.has(getAddress(log.args.asset)),
    );
    return stakes.at(-1)!.blockNumber;
  };

  /** Every wallet that ever staked, from the chain: a stake the tables lack is a mismatch. */
  const chainStakers = () =>
    [
      ...new Set(
        stakerLogs.flatMap((log) =>
          log.eventName === "Stake" ? [log.args.staker.toLowerCase()] : [],
        ),
      ),
    ].sort();

  const eventsStoredAt = async (harness: TestIndexer, block: bigint) => {
    const sql = postgres(harness.database.url, { max: 1, onnotice: () => {} });
    try {
      const [row] =
        await sql`select count(*)::int as n from staker_events where block_number = ${block.toString()}`;
      return row!.n as number;
    } finally {
      await sql.end({ timeout: 5 });
    }
  };

  const lyingNode = () => {
    const node = startLyingNode(devnet.node.rpcUrl);
    nodes.push(node);
    return node;
  };

  test("anvil's header blooms admit every block's staker logs and turn most other blocks away", async () => {
    const { staker } = devnet.deployment.addresses;
    const head = await devnet.client.getBlockNumber();
    const followed = new Set<string>(STAKER_EVENTS);
    const withLogs = new Set(
      stakerLogs.filter((log) => followed.has(log.eventName)).map((log) => log.blockNumber),
    );
    const nowhere: Address = "0x000000000000000000000000000000000000dEaD";
    let turnedAway = 0;
    for (let n = devnet.deployment.deployBlock; n <= head; n++) {
      const { logsBloom } = await devnet.client.getBlock({ blockNumber: n });
      if (withLogs.has(n)) expect(mayHoldStakerLogs(logsBloom, staker)).toBe(true);
      else if (!mayHoldStakerLogs(logsBloom, staker)) turnedAway++;
      expect(mayHoldStakerLogs(logsBloom, nowhere)).toBe(false);
    }
    expect(turnedAway).toBeGreaterThan(0);
  });

  test("on the chunk path, the stake is indexed anyway", async () => {
    const node = lyingNode();
    const block = lastCitizenStakeBlock();
    // Only the staker's answer lies: the Transfers of the block are the check's evidence.
    node.dropLogsOnce(block, { address: devnet.deployment.addresses.staker });
    const harness = await indexDevnet(devnet, {
      label: "missing-logs-chunks",
      rpcUrl: node.url,
      options: { chunkSize: 20 },
    });
    harnesses.push(harness);
    expect(node.counts.droppedLogs).toBeGreaterThan(0);
    expect(await eventsStoredAt(harness, block)).toBe(
      stakerLogs.filter((log) => log.blockNumber === block).length,
    );
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });

  test("on the chunk path, an answer that keeps a block's other logs and drops one Stake is caught", async () => {
    const actions = stakingActions(devnet.client, devnet.deployment);
    const { staker, s1Citizen } = devnet.deployment.addresses;
    const ids = [70_011n, 70_012n];
    await actions.wallet(PARTIAL);
    await actions.mine(ids.map((id) => actions.mintS1(PARTIAL, id)));
    const block = await actions.mine(ids.map((id) => actions.stake(PARTIAL, 1, id)));
    const last = await actions.mine([]);
    const { hash } = await devnet.client.getBlock({ blockNumber: block });
    const inBlock = parseEventLogs({
      abi: mainnetStakerAbi,
      logs: await devnet.client.getLogs({ address: staker, blockHash: hash }),
    });
    const dropped = inBlock.find(
      (log) =>
        log.eventName === "Stake" &&
        getAddress(log.args.asset) === getAddress(s1Citizen) &&
        log.args.amountOrTokenId === ids[1],
    )!;
    const node = lyingNode();
    // The block keeps its two Claims and the other Stake: its bloom still admits staker logs.
    node.dropLogsOnce(block, { address: staker, logIndex: dropped.logIndex });
    const harness = await indexDevnet(devnet, {
      label: "missing-logs-one-of-block",
      rpcUrl: node.url,
      options: { chunkSize: 20 },
      to: last,
    });
    harnesses.push(harness);
    expect(node.counts.droppedLogs).toBe(1);
    expect(await eventsStoredAt(harness, block)).toBe(inBlock.length);
    expect(await harness.mismatches([PARTIAL.toLowerCase()])).toEqual([]);
  });

  test("on the chunk path, tokens sent to the staker without a stake are asked again once and pass", async () => {
    const actions = stakingActions(devnet.client, devnet.deployment);
    const { staker, s1Citizen, bytes } = devnet.deployment.addresses;
    const [sent, staked] = [70_001n, 70_002n];
    await actions.wallet(SENDER);
    const first = await actions.mine([
      actions.mintS1(SENDER, sent),
      actions.mintS1(SENDER, staked),
    ]);
    // One block: a stake (its escrow matched by its Stake log), and a citizen and BYTES sent
    // to the staker by plain transfers (no staker log accounts for them).
    const block = await actions.mine([
      actions.stake(SENDER, 1, staked),
      {
        from: SENDER,
        to: s1Citizen,
        data: encodeFunctionData({
          abi: s1CitizenAbi,
          functionName: "transferFrom",
          args: [SENDER, staker, sent],
        }),
        gas: "0x16e360",
      },
      {
        from: SENDER,
        to: bytes,
        data: encodeFunctionData({
          abi: bytesTokenAbi,
          functionName: "transfer",
          args: [staker, parseEther("3")],
        }),
        gas: "0x16e360",
      },
    ]);
    const last = await actions.mine([]);
    const fetcher = await startDevnetIndexer(devnet, "missing-logs-fetch");
    harnesses.push(fetcher);
    const { hash } = await devnet.client.getBlock({ blockNumber: block });
    const inBlock = await devnet.client.getLogs({ address: staker, blockHash: hash });

    // The range alone: the block is the one suspect, asked again, and passes.
    const write = await fetchRange(fetcher.indexer.deps, { from: first, to: last });
    expect(write.harmlessSuspects).toBe(1);
    expect(write.events.filter((event) => event.blockNumber === block)).toHaveLength(
      inBlock.length,
    );
    expect(write.stakes.map((stake) => stake.citizenId)).toEqual([staked]);
    // And the whole chain through chunk jobs: the stake is indexed as the chain has it.
    const indexed = await indexDevnet(devnet, {
      label: "missing-logs-plain-transfer",
      options: { chunkSize: 20 },
      to: last,
    });
    harnesses.push(indexed);
    expect(await eventsStoredAt(indexed, block)).toBe(inBlock.length);
    expect(await indexed.mismatches([SENDER.toLowerCase()])).toEqual([]);
  });

  test("on the chunk path, the staker's tokens moving between other wallets raise no suspect", async () => {
    const actions = stakingActions(devnet.client, devnet.deployment);
    const { s1Citizen, bytes } = devnet.deployment.addresses;
    const [sold, staked] = [70_021n, 70_022n];
    // Mints (Transfers from the zero address), a sale of a citizen and a BYTES payment between
    // two wallets, and a stake: the check's one query answers every Transfer of the staker's
    // tokens, and only the stake's escrow is the staker's.
    await actions.wallet(TRADER);
    const first = await actions.mine([
      actions.mintS1(TRADER, sold),
      actions.mintS1(TRADER, staked),
    ]);
    await actions.mine([
      {
        from: TRADER,
        to: s1Citizen,
        data: encodeFunctionData({
          abi: s1CitizenAbi,
          functionName: "transferFrom",
          args: [TRADER, BUYER, sold],
        }),
        gas: "0x16e360",
      },
      {
        from: TRADER,
        to: bytes,
        data: encodeFunctionData({
          abi: bytesTokenAbi,
          functionName: "transfer",
          args: [BUYER, parseEther("3")],
        }),
        gas: "0x16e360",
      },
    ]);
    await actions.mine([actions.stake(TRADER, 1, staked)]);
    const last = await actions.mine([]);
    const fetcher = await startDevnetIndexer(devnet, "missing-logs-trades");
    harnesses.push(fetcher);

    const write = await fetchRange(fetcher.indexer.deps, { from: first, to: last });
    expect(write.harmlessSuspects).toBe(0);
    expect(write.stakes.map((stake) => stake.citizenId)).toEqual([staked]);
  });

  test("on the follower's block-by-block path, the stake is indexed anyway", async () => {
    const node = lyingNode();
    const block = lastCitizenStakeBlock();
    node.dropLogsOnce(block);
    const harness = await startTestIndexer({
      label: "missing-logs-follow",
      rpcUrl: node.url,
      staker: devnet.deployment.addresses.staker,
      // Every block above the finality boundary: the follower reads them all block by block.
      options: { finalityDepth: 100_000, followIntervalMs: 50 },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    await harness.waitForHead();
    expect(node.counts.droppedLogs).toBeGreaterThan(0);
    expect(await eventsStoredAt(harness, block)).toBe(
      stakerLogs.filter((log) => log.blockNumber === block).length,
    );
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });
});
