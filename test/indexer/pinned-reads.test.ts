import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { tableSnapshot } from "../support/snapshot.ts";

describe("a node that answers a read at block N from another block's state", () => {
  let devnet: ScenarioDevnet;
  let direct: TestIndexer;
  const harnesses: TestIndexer[] = [];
  const nodes: ReturnType<typeof startLyingNode>[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 400, seed: "pinned-reads" });
    direct = await indexDevnet(devnet, { label: "pinned-direct", options: { chunkSize: 16 } });
    harnesses.push(direct);
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    for (const node of nodes) node.stop();
    await devnet?.stop();
  });

  /** A backfill through a lying node, with the same chunks as the direct one. */
  const backfill = async (label: string, node: ReturnType<typeof startLyingNode>) => {
    const harness = await indexDevnet(devnet, {
      label,
      rpcUrl: node.url,
      options: { chunkSize: 16 },
      timeoutMs: 150_000,
    });
    harnesses.push(harness);
    return harness;
  };

  const lyingNode = () => {
    const node = startLyingNode(devnet.node.rpcUrl);
    nodes.push(node);
    return node;
  };

  test("the direct index matches the staker's views", async () => {
    expect(await direct.mismatches()).toEqual([]);
  });

  test("every read names its block by hash, so the next block's state never reaches a row", async () => {
    const node = lyingNode();
    node.shiftCallsByNumber("next-block");
    const harness = await backfill("pinned-shifted", node);
    expect(node.counts.byHash).toBeGreaterThan(0);
    expect(node.counts.byNumber).toBe(0);
    expect(await tableSnapshot(harness.database.url)).toEqual(
      await tableSnapshot(direct.database.url),
    );
  });

  test("a node that lacks the block fails the read, which is retried by hash, never by number", async () => {
    const node = lyingNode();
    node.shiftCallsByNumber("next-block");
    node.refuseBlockHashes({ code: -32001, message: "Resource not found" }, 40);
    const harness = await backfill("pinned-lacking", node);
    expect(node.counts.refusedBlockHashes).toBe(40);
    expect(node.counts.byNumber).toBe(0);
    expect(await tableSnapshot(harness.database.url)).toEqual(
      await tableSnapshot(direct.database.url),
    );
  });

  test("a node that refuses block hashes is read by number, and the tables are still right", async () => {
    const node = lyingNode();
    node.refuseBlockHashes({
      code: -32602,
      message: "invalid argument 1: hex string without 0x prefix",
    });
    const harness = await backfill("pinned-numbers", node);
    expect(node.counts.refusedBlockHashes).toBeGreaterThan(0);
    expect(node.counts.byNumber).toBeGreaterThan(0);
    expect(await tableSnapshot(harness.database.url)).toEqual(
      await tableSnapshot(direct.database.url),
    );
  });

  test("a node that answers a block hash it cannot hold is read by number", async () => {
    const node = lyingNode();
    node.ignoreBlockHashes();
    const harness = await backfill("pinned-ignored", node);
    // The probe alone went by hash: every read after it named its block by number.
    expect(node.counts.byHash).toBe(1);
    expect(node.counts.byNumber).toBeGreaterThan(0);
    expect(await tableSnapshot(harness.database.url)).toEqual(
      await tableSnapshot(direct.database.url),
    );
  });

  // Last: the live blocks change the chain the tests above compare against.
  test("following the head, a read at the newest block is never answered from a later one", async () => {
    const node = lyingNode();
    node.shiftCallsByNumber("latest");
    const harness = await startTestIndexer({
      label: "pinned-follow",
      rpcUrl: node.url,
      staker: devnet.deployment.addresses.staker,
      // Every block above the finality boundary: the follower reads them at the head.
      options: { finalityDepth: 100_000, followIntervalMs: 50 },
    });
    harnesses.push(harness);
    await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
    await harness.indexer.start({ follow: true });
    const stop = new AbortController();
    let produced = 0;
    await devnet.scenario.live({
      intervalMs: 100,
      transactionsPerBlock: 4,
      signal: stop.signal,
      onBlock: () => {
        if (++produced >= 30) stop.abort();
      },
    });
    const head = await harness.waitForHead();
    expect(node.counts.byNumber).toBe(0);
    // What each stake applied, as a direct index of the same (now still) chain has it. Citizens
    // are left out: the block their components were read at follows the ticks' timing.
    const reference = await indexDevnet(devnet, { label: "pinned-follow-direct", to: head });
    harnesses.push(reference);
    const history = async (url: string) => {
      const { staker_events, citizen_stakes } = await tableSnapshot(url);
      return { staker_events, citizen_stakes };
    };
    expect(await history(harness.database.url)).toEqual(await history(reference.database.url));
  });
});
