import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { type Address, encodeFunctionData, type Hex } from "viem";
import {
  identityAbi,
  stakerLogFloodAbi,
  stakerLogFloodDeployedBytecode,
} from "../../contracts/generated/index.ts";
import { citizens, readFailures, stakedCitizens, stakerEvents } from "../../db/schema.ts";
import type { IndexerOptions } from "../../indexer/indexer.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, startDevnetIndexer, type TestIndexer } from "../support/indexer.ts";
import { stakingActions, type TransactionJson } from "../support/staking.ts";

const WALLET: Address = "0x000000000000000000000000000000000000bad1";
/** Stakes of the follower test: a follower started mid-chain knows only what came after. */
const LIVE_WALLET: Address = "0x000000000000000000000000000000000000bad2";
const FLOOD_RECIPIENT: Address = "0x000000000000000000000000000000000000bad3";
const GAS = "0x5f5e100" as Hex;

/** The tokenURI faults of the devnet citizens (contracts/src/CitizenMetadata.sol). */
const FAULTS = [
  { fault: 1, reason: "tokenURI reverted: no data" },
  { fault: 2, reason: /^tokenURI reverted: \S/ },
  // The mainnet citizen ABI does not know the devnet's custom error: its selector names it.
  { fault: 3, reason: /^tokenURI reverted: custom error 0x[0-9a-f]{8}$/ },
  { fault: 4, reason: "tokenURI reverted: Panic(0x01)" },
  { fault: 5, reason: /^tokenURI reverted: .*(InvalidFEOpcode|invalid opcode)/i },
  { fault: 6, reason: "tokenURI's JSON does not parse" },
  { fault: 7, reason: /^tokenURI is not inline JSON: https:/ },
  { fault: 8, reason: "tokenURI is empty" },
] as const;

describe("reads that fail on data, and answers too large for one request", () => {
  let devnet: ScenarioDevnet;
  let actions: ReturnType<typeof stakingActions>;
  const harnesses: TestIndexer[] = [];
  let nextId = 50_000n;

  const deployerTx = (to: Address, data: Hex): TransactionJson => ({
    from: devnet.deployment.deployer,
    to,
    data,
    gas: GAS,
  });

  const fresh = async (label: string, options: Partial<IndexerOptions> = {}) => {
    const harness = await startDevnetIndexer(devnet, label, { followIntervalMs: 50, ...options });
    harnesses.push(harness);
    return harness;
  };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 200, seed: "bad-reads" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
    await actions.wallet(LIVE_WALLET);
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  test("citizens whose tokenURI reverts or is unreadable are indexed with the fallback, and listed", async () => {
    const ids = FAULTS.map(() => nextId++);
    await actions.mine(ids.map((id) => actions.mintS1(WALLET, id)));
    await actions.mine(ids.map((id, i) => actions.setMetadataFault(1, id, FAULTS[i]!.fault)));
    await actions.mine(ids.map((id) => actions.stake(WALLET, 1, id)));
    const head = await devnet.client.getBlockNumber();

    const harness = await indexDevnet(devnet, {
      label: "metadata",
      options: { followIntervalMs: 50 },
      to: head,
    });
    harnesses.push(harness);

    const db = harness.indexer.database.db;
    for (const [i, id] of ids.entries()) {
      const [row] = await db
        .select({ name: stakedCitizens.name, image: stakedCitizens.image })
        .from(stakedCitizens)
        .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));
      expect(row).toEqual({ name: null, image: null });
      const [failure] = await db
        .select()
        .from(readFailures)
        .where(and(eq(readFailures.season, 1), eq(readFailures.citizenId, id)));
      const expected = FAULTS[i]!.reason;
      if (typeof expected === "string") expect(failure?.reason).toBe(expected);
      else expect(failure?.reason).toMatch(expected);
    }
    expect(await harness.mismatches([WALLET])).toEqual([]);

    const listed = await harness.cli(["read-failures"]);
    expect(listed.code).toBe(0);
    for (const id of ids) expect(listed.stdout).toContain(`s1 #${id}\ttokenURI`);

    // The contract is mended; an operator reads the metadata again and the names come back.
    await actions.mine(ids.map((id) => actions.setMetadataFault(1, id, 0)));
    const retried = await harness.cli(["read-failures", "--retry"]);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain(`${ids.length} fixed, 0 still failing`);
    const names = await db
      .select({ id: citizens.citizenId, name: stakedCitizens.name })
      .from(stakedCitizens)
      .innerJoin(
        citizens,
        and(
          eq(citizens.season, stakedCitizens.season),
          eq(citizens.citizenId, stakedCitizens.citizenId),
        ),
      )
      .where(eq(stakedCitizens.staker, WALLET.toLowerCase()));
    for (const id of ids) {
      expect(names.find((row) => row.id === id)?.name).toBe(`Citizen #${id}`);
    }
    expect(await db.select().from(readFailures)).toEqual([]);
  });

  test("a citizen whose metadata starts reverting while following is indexed with the fallback", async () => {
    const harness = await fresh("metadata-live", { finalityDepth: undefined });
    await harness.indexer.ensureCheckpoint(await actions.mine([]));
    await harness.indexer.start({ follow: true });
    await harness.waitForHead();
    const id = nextId++;
    await actions.mine([actions.mintS1(LIVE_WALLET, id), actions.setMetadataFault(1, id, 2)]);
    await actions.mine([actions.stake(LIVE_WALLET, 1, id)]);
    await harness.waitForHead();
    const db = harness.indexer.database.db;
    const rows = await db
      .select({ name: stakedCitizens.name })
      .from(stakedCitizens)
      .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));
    expect(rows).toEqual([{ name: null }]);
    expect(await db.select().from(readFailures)).toHaveLength(1);
    const follow = (await harness.indexer.store.health()).find((row) => row.component === "follow");
    expect(follow?.failingSince ?? null).toBeNull();
    expect(await harness.mismatches([LIVE_WALLET])).toEqual([]);
    await actions.mine([actions.setMetadataFault(1, id, 0)]);
  });

  test("a block range whose logs exceed viem's 10 MiB answer cap is indexed with default settings", async () => {
    const staker = devnet.deployment.addresses.staker;
    const stakerCode = await devnet.client.getCode({ address: staker });
    // anvil_setCode rewrites the head block's state: keep stakes out of the blocks it touches.
    await actions.mine([]);
    // The flood contract emits the staker's own Claim event from the staker's address.
    await devnet.client.setCode({ address: staker, bytecode: stakerLogFloodDeployedBytecode });
    const flood = (count: bigint): TransactionJson =>
      deployerTx(
        staker,
        encodeFunctionData({
          abi: stakerLogFloodAbi,
          functionName: "flood",
          args: [FLOOD_RECIPIENT, count],
        }),
      );
    const first = await actions.mine([flood(6_000n), flood(6_000n)]);
    await actions.mine([flood(6_000n), flood(6_000n)]);
    await devnet.client.setCode({ address: staker, bytecode: stakerCode! });
    await actions.mine([]);
    const head = await devnet.client.getBlockNumber();

    const defaults = { chunkSize: 2_000, maxLogRange: 10_000 };
    const backfilled = await indexDevnet(devnet, {
      label: "flood-chunks",
      options: { followIntervalMs: 50, ...defaults },
      to: head,
      timeoutMs: 90_000,
    });
    harnesses.push(backfilled);

    const followed = await fresh("flood-follow", { ...defaults, finalityDepth: undefined });
    await followed.indexer.ensureCheckpoint(first - 1n);
    await followed.indexer.start({ follow: true });
    await followed.waitForHead(90_000);

    for (const harness of [backfilled, followed]) {
      const floodClaims = await harness.indexer.database.db
        .select({ block: stakerEvents.blockNumber })
        .from(stakerEvents)
        .where(
          and(
            eq(stakerEvents.event, "Claim"),
            eq(stakerEvents.account, FLOOD_RECIPIENT.toLowerCase()),
          ),
        );
      expect(floodClaims.length).toBe(24_000);
    }
    expect(await backfilled.mismatches([WALLET])).toEqual([]);
  });

  // Last: the reverting read stays in the chain's history, and any later backfill would stop on it.
  test("a view the points depend on that reverts stops its range with a named error in status", async () => {
    const id = nextId++;
    await actions.mine([actions.mintS1(WALLET, id)]);
    // The identity's class decides the Hand reading of the points; the staker reads it only
    // for a Hand claim, so a plain stake goes through while the indexer's read reverts.
    await actions.mine([
      deployerTx(
        devnet.deployment.addresses.identity,
        encodeFunctionData({ abi: identityAbi, functionName: "setClassReverts", args: [id, true] }),
      ),
      actions.stake(WALLET, 1, id),
    ]);
    const head = await devnet.client.getBlockNumber();
    const harness = await fresh("view-revert");
    const backfill = await harness.cli(["backfill", "--to", String(head)]);
    expect(backfill.code).not.toBe(0);
    expect(backfill.stderr).toContain("failed for good");
    expect(backfill.stderr).toContain("ReadReverted");
    expect(backfill.stderr).toContain("getClass");
    const status = await harness.cli(["status"]);
    expect(status.stdout).toMatch(/parked \(fails for good\): ReadReverted: getClass\(/);
    expect(status.stdout).toMatch(/chunk workers\s+FAILING .*needs an operator/);
    const checkpoint = await harness.indexer.store.checkpoint();
    expect(checkpoint!.indexedBlock).toBeLessThan(head);
    await actions.mine([
      deployerTx(
        devnet.deployment.addresses.identity,
        encodeFunctionData({
          abi: identityAbi,
          functionName: "setClassReverts",
          args: [id, false],
        }),
      ),
    ]);
  });
});
