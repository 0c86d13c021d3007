import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { type Address, encodeFunctionData, getAddress, parseEther, parseEventLogs } from "viem";
import { bytesTokenAbi, s1CitizenAbi } from "../../contracts/generated/index.ts";
import { mainnetStakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { mayHoldStakerLogs } from "../../indexer/chain/log-bloom.ts";
import { STAKER_EVENTS } from "../../indexer/chain/staker-log-decoder.ts";
import { fetchRange } from "../../indexer/fetch/fetch-range.ts";
import { createApiHarness } from "../api/support.ts";
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

  const lyingNode = (upstream = devnet.node.rpcUrl) => {
    const node = startLyingNode(upstream);
    nodes.push(node);
    return node;
  };

  const stakerLogsAt = (block: bigint) =>
    stakerLogs.filter((log) => log.blockNumber === block).length;

  /** The blocks holding logs the indexer follows (Stake, Withdraw, Claim), in order. */
  const followedBlocks = () => {
    const followed = new Set<string>(STAKER_EVENTS);
    return [
      ...new Set(
        stakerLogs.filter((log) => followed.has(log.eventName)).map((log) => log.blockNumber),
      ),
    ];
  };

  /** The follower from the deploy block, every block above the finality boundary: block by block. */
  const follower = async (label: string, rpcUrl: string) => {
    const harness = await startTestIndexer({
      label,
      rpcUrl,
      staker: devnet.deployment.addresses.staker,
      // Above the devnet's head: every block is the follower's (FINALITY_DEPTH's largest).
      options: { finalityDepth: 200, followIntervalMs: 50 },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    return harness;
  };

  /** One sample of the indexer's metrics, by its name and labels as Prometheus prints them. */
  const metric = async (harness: TestIndexer, sample: string) => {
    const text = await harness.indexer.metrics.scrape();
    const line = text.split("\n").find((each) => each.startsWith(`${sample} `));
    return line === undefined ? undefined : Number(line.slice(sample.length + 1));
  };

  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await Bun.sleep(50);
    }
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
    expect(write.logCheck.askedAgain).toBe(1);
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
    expect(write.logCheck.askedAgain).toBe(0);
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

  test("on the follower's path, a block whose staker logs every eth_getLogs answer leaves out is written from its receipts", async () => {
    const node = lyingNode();
    const block = lastCitizenStakeBlock();
    // The range's answer and the re-ask by hash both lack them: only the receipts hold them.
    node.hideLogs(block, devnet.deployment.addresses.staker);
    const harness = await follower("missing-logs-receipts", node.url);
    await harness.waitForHead();
    expect(await eventsStoredAt(harness, block)).toBe(stakerLogsAt(block));
    expect(node.counts.droppedLogs).toBeGreaterThanOrEqual(2 * stakerLogsAt(block));
    expect(node.counts.blockReceipts).toBeGreaterThan(0);
    expect(
      await metric(
        harness,
        'citizen_staking_log_check_blocks_total{queue="follow",outcome="corrected"}',
      ),
    ).toBe(1);
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });

  test("on the follower's path, a node whose receipts lack them too holds the follower at the block, and status, /readyz and metrics say why", async () => {
    const node = lyingNode();
    const block = lastCitizenStakeBlock();
    node.hideLogs(block, devnet.deployment.addresses.staker, { receipts: true });
    const harness = await follower("missing-logs-held", node.url);
    const followHealth = async () =>
      (await harness.indexer.store.health()).find((row) => row.component === "follow");
    await until("the follower to hold", async () =>
      Boolean((await followHealth())?.lastError?.startsWith("StakerLogsUnsettled")),
    );
    // Every block before it is written; nothing of it.
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBe(block - 1n);
    expect(await eventsStoredAt(harness, block)).toBe(0);
    const failure = (await followHealth())!;
    expect(failure.failingSince).not.toBeNull();
    expect(failure.lastError).toContain(`block ${block}`);
    expect(failure.lastError).toContain("receiptsRoot");

    const status = await harness.cli(["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("FAILING");
    expect(status.stdout).toContain(`StakerLogsUnsettled: the staker logs of block ${block}`);
    const api = await createApiHarness({ databaseUrl: harness.database.url });
    try {
      const ready = await api.request("/readyz");
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { follower: string; reasons: string[] };
      expect(body.follower).toBe("failing");
      expect(body.reasons.join("\n")).toContain(
        `StakerLogsUnsettled: the staker logs of block ${block}`,
      );
    } finally {
      await api.close();
    }
    expect(await metric(harness, "citizen_staking_unsettled_block")).toBe(Number(block));
    expect(
      await metric(harness, 'citizen_staking_job_failures_total{queue="follow",fatal="true"}'),
    ).toBeGreaterThan(0);

    // Receipts that match their root again settle it: the block is written from them.
    node.stopTamperingReceipts(block);
    await harness.waitForHead();
    expect(await eventsStoredAt(harness, block)).toBe(stakerLogsAt(block));
    expect(await metric(harness, "citizen_staking_unsettled_block")).toBe(0);
    await until(
      "the follower's health to clear",
      async () => (await followHealth())?.failingSince === null,
    );
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });

  test("on the follower's path, a node without eth_getBlockReceipts holds the follower where a bloom admits staker logs", async () => {
    const node = lyingNode();
    node.refuseBlockReceipts();
    const harness = await follower("missing-logs-no-receipts", node.url);
    await until("the follower to hold", async () => {
      const row = (await harness.indexer.store.health()).find(
        (each) => each.component === "follow",
      );
      return Boolean(row?.lastError?.includes("eth_getBlockReceipts"));
    });
    const first = followedBlocks()[0]!;
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBe(first - 1n);
    expect(await metric(harness, "citizen_staking_unsettled_block")).toBe(Number(first));
  });

  test("on the follower's path, bloom false positives are settled by their receipts and the follower goes on", async () => {
    const node = lyingNode();
    // Every bloom admits everything, as near-full mainnet blooms often admit the staker: every
    // block is asked again and its receipts read, the ones without staker logs included.
    node.fillBlooms();
    const harness = await follower("missing-logs-false-positives", node.url);
    const head = await harness.waitForHead();
    const blocks = Number(head - devnet.deployment.deployBlock);
    // Earlier tests mined more blocks: the chain's logs as they are now.
    const withLogs = new Set(
      (
        await devnet.client.getLogs({
          address: devnet.deployment.addresses.staker,
          events: mainnetStakerAbi.filter(
            (item) =>
              item.type === "event" && (STAKER_EVENTS as readonly string[]).includes(item.name),
          ),
          fromBlock: devnet.deployment.deployBlock + 1n,
          toBlock: head,
        })
      ).map((log) => log.blockNumber),
    ).size;
    const receipts = await metric(
      harness,
      'citizen_staking_log_check_blocks_total{queue="follow",outcome="receipts_checked"}',
    );
    expect(receipts).toBeGreaterThanOrEqual(blocks);
    expect(
      await metric(
        harness,
        'citizen_staking_log_check_blocks_total{queue="follow",outcome="asked_again"}',
      ),
    ).toBeGreaterThanOrEqual(blocks - withLogs);
    expect(
      await metric(
        harness,
        'citizen_staking_log_check_blocks_total{queue="follow",outcome="corrected"}',
      ),
    ).toBe(0);
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });

  test("on the chunk path, a second node (RPC_CHECK_URL) catches a block the first leaves out of every answer", async () => {
    const node = lyingNode();
    const block = lastCitizenStakeBlock();
    node.hideLogs(block, devnet.deployment.addresses.staker);
    const harness = await indexDevnet(devnet, {
      label: "missing-logs-check-node",
      rpcUrl: node.url,
      options: { chunkSize: 20, checkRpcUrl: devnet.node.rpcUrl },
    });
    harnesses.push(harness);
    expect(node.counts.droppedLogs).toBeGreaterThan(0);
    expect(await eventsStoredAt(harness, block)).toBe(stakerLogsAt(block));
    expect(
      await metric(
        harness,
        'citizen_staking_log_check_blocks_total{queue="chunks",outcome="disputed"}',
      ),
    ).toBe(1);
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });

  test("on the chunk path, a dispute no receipts settle parks the chunk, and status says why", async () => {
    const primary = lyingNode();
    const check = lyingNode();
    const block = lastCitizenStakeBlock();
    primary.hideLogs(block, devnet.deployment.addresses.staker, { receipts: true });
    check.refuseBlockReceipts();
    const harness = await startTestIndexer({
      label: "missing-logs-disputed",
      rpcUrl: primary.url,
      staker: devnet.deployment.addresses.staker,
      options: { chunkSize: 20, checkRpcUrl: check.url },
    });
    harnesses.push(harness);
    const { to } = await harness.indexer.enqueueBackfill({
      startBlock: devnet.deployment.deployBlock,
    });
    await harness.indexer.start({ follow: false });
    let reason = "";
    await until("the chunk to park", async () => {
      const [failed] = await harness.indexer.queues.chunks.getFailed(0, 0);
      reason = failed?.failedReason ?? "";
      return reason !== "";
    });
    expect(reason).toContain(`StakerLogsDisputed: block ${block}`);
    expect((await harness.indexer.store.checkpoint())!.indexedBlock).toBeLessThan(block);
    expect(await eventsStoredAt(harness, block)).toBe(0);
    const status = await harness.cli(["status"]);
    expect(status.stdout).toContain("parked (fails for good)");
    expect(status.stdout).toContain(`StakerLogsDisputed: block ${block}`);
    expect(
      await metric(
        harness,
        'citizen_staking_log_check_blocks_total{queue="chunks",outcome="parked"}',
      ),
    ).toBe(1);
    expect(to).toBeGreaterThan(block);
  });

  test("on the chunk path without a second node, the Transfer check's suspect is settled by its receipts", async () => {
    const node = lyingNode();
    const block = lastCitizenStakeBlock();
    node.hideLogs(block, devnet.deployment.addresses.staker);
    const harness = await indexDevnet(devnet, {
      label: "missing-logs-transfer-receipts",
      rpcUrl: node.url,
      options: { chunkSize: 20 },
    });
    harnesses.push(harness);
    expect(await eventsStoredAt(harness, block)).toBe(stakerLogsAt(block));
    expect(
      await metric(
        harness,
        'citizen_staking_log_check_blocks_total{queue="chunks",outcome="corrected"}',
      ),
    ).toBe(1);
    expect(await harness.mismatches(chainStakers())).toEqual([]);
  });
});
