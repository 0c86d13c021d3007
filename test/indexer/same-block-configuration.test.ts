/**
 * The staker's owner reconfigures identity credit points or vault multipliers in a stake's own
 * block (no event says so): after the stake, before it, or both. Reads "at the stake's block"
 * see the end of that block, so the indexer must take the figures the stake itself read, which
 * its stored points witness: from the block before, or from the stake transaction's prestate;
 * where nothing explains them, the record says its figures are inferred, and read-failures, the
 * metrics and verify agree. Each case runs through the chunk path and the follower's (dense)
 * path, with a node that has a prestate tracer and with one that has none. The chain is the
 * oracle: each stake's own points, read at its block, give the figures it applied.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { type Address, encodeFunctionData, type Hex } from "viem";
import { neoTokyoStakerAbi, s1CitizenAbi, vaultAbi } from "../../contracts/generated/index.ts";
import { citizenStakes } from "../../db/schema.ts";
import { citizenRewardRate, type IdentityKind, STAKER_ASSET_ID } from "../../devnet/settings.ts";
import { stakeCalldata } from "../../devnet/staking-calls.ts";
import { s1BasePoints } from "../../lib/vocabulary.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, startTestIndexer, type TestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { stakingActions, type TransactionJson } from "../support/staking.ts";

const WALLET: Address = "0x00000000000000000000000000000000005a3eb1";
/** Timelock option 2 of S1: 6 months at 1.50x. */
const OPTION = 2;
const TIMELOCK_MULTIPLIER = 150n;
const GAS = "0x989680" as Hex;
const CONFIGURATION_FIELDS = ["identity.creditYield", "identity.points", "vault.multiplier"];

interface Case {
  label: string;
  citizenId: bigint;
  identity: IdentityKind;
  /** A vault staked with the citizen (its tier), or none. */
  vault?: { id: bigint; tier: "Medium" };
  /** What the stake applied: the configuration between the changes before it and after it. */
  applied: { identityPoints: bigint; vaultMultiplier: bigint };
  /** Its block: [changes before the stake], the stake, [changes after it]. */
  before: { yield?: [string, bigint]; vault?: [string, bigint] }[];
  after: { yield?: [string, bigint]; vault?: [string, bigint] }[];
  /** Where the figures come from on a node with a prestate tracer. */
  source: "block" | "parent" | "trace";
  block?: bigint;
}

const cases: Case[] = [
  {
    label: "identity points changed after the stake",
    citizenId: 71_001n,
    identity: "Low",
    applied: { identityPoints: 100n, vaultMultiplier: 100n },
    before: [],
    after: [{ yield: ["Low", 1_100n] }],
    source: "parent",
  },
  {
    label: "a vault multiplier changed after the stake",
    citizenId: 71_002n,
    identity: "Mid",
    vault: { id: 71_002n, tier: "Medium" },
    applied: { identityPoints: 200n, vaultMultiplier: 150n },
    before: [],
    after: [{ vault: ["Medium", 227n] }],
    source: "parent",
  },
  {
    label: "identity points changed before the stake",
    citizenId: 71_003n,
    identity: "Mid",
    applied: { identityPoints: 500n, vaultMultiplier: 100n },
    before: [{ yield: ["Mid", 500n] }],
    after: [],
    source: "block",
  },
  {
    label: "identity points changed before and after the stake",
    citizenId: 71_004n,
    identity: "High",
    applied: { identityPoints: 700n, vaultMultiplier: 100n },
    before: [{ yield: ["High", 700n] }],
    after: [{ yield: ["High", 1_300n] }],
    source: "trace",
  },
];
const unexplained = cases.find((each) => each.source === "trace")!;

type Served = {
  identity: { creditYield: string; points: number };
  vault: { multiplier: number };
  totalPoints: number;
  inferred?: string[];
};

describe("configuration changed in a stake's own block", () => {
  let devnet: ScenarioDevnet;
  let head: bigint;
  let proxy: ReturnType<typeof startRpcFaultProxy>;
  const harnesses: TestIndexer[] = [];

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 40, seed: "same-block" });
    const { addresses, deployer } = devnet.deployment;
    const actions = stakingActions(devnet.client, devnet.deployment);
    const owner = (data: Hex, to: Address = addresses.staker): TransactionJson => ({
      from: deployer,
      to,
      data,
      gas: GAS,
    });
    const configure = (change: Case["before"][number]) =>
      change.yield
        ? owner(
            encodeFunctionData({
              abi: neoTokyoStakerAbi,
              functionName: "configureIdentityCreditPoints",
              args: [[change.yield[0]], [change.yield[1]]],
            }),
          )
        : owner(
            encodeFunctionData({
              abi: neoTokyoStakerAbi,
              functionName: "configureVaultCreditMultipliers",
              args: [[change.vault![0]], [change.vault![1]]],
            }),
          );

    await actions.wallet(WALLET);
    await actions.mine(
      cases.flatMap((each) => [
        owner(
          encodeFunctionData({
            abi: s1CitizenAbi,
            functionName: "mint",
            args: [
              WALLET,
              each.citizenId,
              each.citizenId,
              0n,
              1n,
              1n,
              citizenRewardRate(each.identity, ""),
            ],
          }),
          addresses.s1Citizen,
        ),
        ...(each.vault
          ? [
              owner(
                encodeFunctionData({
                  abi: vaultAbi,
                  functionName: "mint",
                  args: [WALLET, each.vault.id, each.vault.tier],
                }),
                addresses.vault,
              ),
            ]
          : []),
      ]),
    );
    // One block per case, its transactions in the order sent (the devnet's anvil mines FIFO).
    for (const each of cases) {
      each.block = await actions.mine([
        ...each.before.map(configure),
        {
          from: WALLET,
          to: addresses.staker,
          data: stakeCalldata(
            STAKER_ASSET_ID.s1_citizen,
            OPTION,
            each.citizenId,
            each.vault?.id ?? 0n,
          ),
          gas: GAS,
        },
        ...each.after.map(configure),
      ]);
    }
    // Later blocks: a chunk reads its stakes at its last block first (stake-proof.ts), and the
    // owner reconfigures once more, so no later block shows what any case applied either.
    await actions.mine(
      (["Low", "Mid", "High"] as const).map((creditYield) =>
        configure({ yield: [creditYield, 5_000n] }),
      ),
    );
    await devnet.client.mine({ blocks: 3 });
    head = await devnet.client.getBlockNumber();
    const refused = { code: -32601, message: "the method does not exist/is not available" };
    proxy = startRpcFaultProxy({
      upstream: devnet.node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      refuseMethods: { debug_traceTransaction: refused, trace_transaction: refused },
    });
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    proxy?.stop();
    await devnet?.stop();
  });

  const stakerRead = (functionName: string, args: unknown[], blockNumber: bigint) =>
    devnet.client.readContract({
      address: devnet.deployment.addresses.staker,
      abi: neoTokyoStakerAbi,
      functionName,
      args,
      blockNumber,
    } as never) as Promise<unknown>;

  test("the chain: each stake applied the configuration between its block's changes", async () => {
    for (const each of cases) {
      const [, , points] = (await stakerRead(
        "stakedS1",
        [WALLET, each.citizenId],
        each.block!,
      )) as bigint[];
      const { identityPoints, vaultMultiplier } = each.applied;
      expect({ case: each.label, points }).toEqual({
        case: each.label,
        points: s1BasePoints(identityPoints, vaultMultiplier, TIMELOCK_MULTIPLIER),
      });
      // Which end of the block shows what the stake applied, and which does not.
      const creditYield = (await stakerRead(
        "getCreditYield",
        [each.citizenId, 0n],
        each.block!,
      )) as string;
      const figures = async (blockNumber: bigint) => ({
        identityPoints: (await stakerRead(
          "identityCreditPoints",
          [creditYield],
          blockNumber,
        )) as bigint,
        vaultMultiplier: each.vault
          ? ((await stakerRead(
              "getConfiguredVaultMultiplier",
              [each.vault.id],
              blockNumber,
            )) as bigint)
          : 100n,
      });
      const [atEnd, atStart] = [await figures(each.block!), await figures(each.block! - 1n)];
      expect({
        case: each.label,
        end: atEnd.identityPoints === identityPoints && atEnd.vaultMultiplier === vaultMultiplier,
      }).toEqual({ case: each.label, end: each.source === "block" });
      expect({
        case: each.label,
        start:
          atStart.identityPoints === identityPoints && atStart.vaultMultiplier === vaultMultiplier,
      }).toEqual({ case: each.label, start: each.source === "parent" });
    }
  });

  const paths = {
    /** Chunk jobs: every block up to `head` is below the finality boundary. */
    chunks: async (label: string, rpcUrl: string) => {
      const harness = await indexDevnet(devnet, { label, rpcUrl, to: head });
      harnesses.push(harness);
      return harness;
    },
    /** The follower alone: the boundary (200 blocks down) sits below the deploy block. */
    follower: async (label: string, rpcUrl: string) => {
      const harness = await startTestIndexer({
        label,
        rpcUrl,
        staker: devnet.deployment.addresses.staker,
        options: { finalityDepth: 200 },
      });
      harnesses.push(harness);
      await harness.indexer.ensureCheckpoint(devnet.deployment.deployBlock);
      await harness.indexer.start({ follow: true });
      await harness.waitForHead();
      // Nothing went to chunk jobs: the follower wrote every block itself.
      const metrics = await harness.indexer.metrics.scrape();
      expect(metrics).toContain('citizen_staking_events_indexed_total{queue="follow"}');
      expect(metrics).not.toContain('citizen_staking_events_indexed_total{queue="chunks"}');
      return harness;
    },
  };

  const storedSource = async (harness: TestIndexer, each: Case) => {
    const [row] = await harness.indexer.database.db
      .select({ source: citizenStakes.configurationSource })
      .from(citizenStakes)
      .where(and(eq(citizenStakes.season, 1), eq(citizenStakes.citizenId, each.citizenId)));
    return row?.source;
  };

  const served = async (harness: TestIndexer) => {
    const api = await createApiHarness({ databaseUrl: harness.database.url });
    try {
      const records = new Map<bigint, Served>();
      for (const each of cases) {
        const response = await api.request(
          `/v1/staking/citizens/s1/${each.citizenId}?address=${WALLET}`,
        );
        expect(response.status).toBe(200);
        records.set(each.citizenId, (await response.json()) as Served);
      }
      return records;
    } finally {
      await api.close();
    }
  };

  /** The figures the record serves, and its points by the staker's rule from them. */
  const figuresOf = (record: Served) => ({
    identityPoints: BigInt(record.identity.points),
    vaultMultiplier: BigInt(record.vault.multiplier),
    inferred: record.inferred,
  });

  for (const path of ["chunks", "follower"] as const) {
    test(`${path}: every stake is served with what it applied (the one changed on both sides from the prestate trace)`, async () => {
      const harness = await paths[path](`same-block-${path}`, devnet.node.rpcUrl);
      const records = await served(harness);
      for (const each of cases) {
        const record = records.get(each.citizenId)!;
        expect({
          case: each.label,
          ...figuresOf(record),
          source: await storedSource(harness, each),
        }).toEqual({
          case: each.label,
          ...each.applied,
          inferred: undefined,
          source: each.source,
        });
        expect(BigInt(record.totalPoints)).toBe(
          s1BasePoints(
            each.applied.identityPoints,
            each.applied.vaultMultiplier,
            TIMELOCK_MULTIPLIER,
          ),
        );
      }
      expect(await harness.mismatches()).toEqual([]);
    });

    test(`${path}: on a node without a prestate tracer the stake changed on both sides is marked inferred, listed and counted`, async () => {
      const harness = await paths[path](`same-block-${path}-untraced`, proxy.url);
      const records = await served(harness);
      for (const each of cases.filter((other) => other !== unexplained)) {
        expect({ case: each.label, ...figuresOf(records.get(each.citizenId)!) }).toEqual({
          case: each.label,
          ...each.applied,
          inferred: undefined,
        });
      }
      const record = records.get(unexplained.citizenId)!;
      // The end of its block's figures, which do not give the staker's own points: said so.
      expect(figuresOf(record)).toEqual({
        identityPoints: 1_300n,
        vaultMultiplier: 100n,
        inferred: CONFIGURATION_FIELDS,
      });
      expect(BigInt(record.totalPoints)).toBe(
        s1BasePoints(unexplained.applied.identityPoints, 100n, TIMELOCK_MULTIPLIER),
      );
      expect(await storedSource(harness, unexplained)).toBe("inferred");

      const listed = await harness.cli(["read-failures"], { RPC_URL: proxy.url });
      expect(listed.stderr).toBe("");
      const lines = listed.stdout.split("\n").filter((line) => line.includes("\tconfiguration\t"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith(
        `s1 #${unexplained.citizenId}\tconfiguration\tblock ${unexplained.block}\t`,
      );
      expect(await harness.indexer.metrics.scrape()).toContain(
        "\ncitizen_staking_inferred_configurations 1\n",
      );
      // The chain cannot say what the stake read: its points and position still match, and the
      // figures it could not read are no mismatch.
      expect(await harness.mismatches()).toEqual([]);
    });
  }

  test("a reindex of the inferred stake's block on a node with a prestate tracer settles it", async () => {
    const harness = await paths.chunks("same-block-reindexed", proxy.url);
    expect(await storedSource(harness, unexplained)).toBe("inferred");
    // Its own workers (behind the proxy) must not take the reindex's chunk.
    await harness.indexer.close();
    const block = String(unexplained.block);
    const reindexed = await harness.cli(["reindex", "--from", block, "--to", block], {
      RPC_URL: devnet.node.rpcUrl,
    });
    expect(reindexed.code).toBe(0);
    const record = (await served(harness)).get(unexplained.citizenId)!;
    expect(figuresOf(record)).toEqual({ ...unexplained.applied, inferred: undefined });
    const listed = await harness.cli(["read-failures"], { RPC_URL: devnet.node.rpcUrl });
    expect(listed.stdout).not.toContain("\tconfiguration\t");
  });
});
