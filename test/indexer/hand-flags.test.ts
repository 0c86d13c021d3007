/**
 * Hand of Citadel claims sent through a contract wallet, where the points cannot tell a claim
 * from none (0 identity points): the indexer reads the flag from the node's call trace, and
 * where the node has no trace API it assumes no claim and marks the row as inferred.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { type Address, encodeFunctionData, type Hex } from "viem";
import {
  forwarderAbi,
  forwarderBytecode,
  identityAbi,
  neoTokyoStakerAbi,
  s1CitizenAbi,
  vaultAbi,
} from "../../contracts/generated/index.ts";
import { citizenStakes } from "../../db/schema.ts";
import { HAND_CLASS, STAKER_ASSET_ID } from "../../devnet/settings.ts";
import { stakeCalldata } from "../../devnet/staking-calls.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { stakingActions, type TransactionJson } from "../support/staking.ts";

type ApiHarness = Awaited<ReturnType<typeof createApiHarness>>;

/** No (rate, vault) pair maps this rate to a credit yield: the stake scores 0 identity points. */
const UNMAPPED_RATE = 99n;
const GAS = "0x989680" as Hex;

describe("Hand claims through a contract wallet", () => {
  let devnet: ScenarioDevnet;
  let forwarder: Address;
  const harnesses: TestIndexer[] = [];
  const cases: Array<{ label: string; citizenId: bigint; vaultId: bigint; claim: boolean }> = [];
  let head: bigint;

  const deployerTx = (to: Address, data: Hex): TransactionJson => ({
    from: devnet.deployment.deployer,
    to,
    data,
    gas: GAS,
  });
  const through = (calls: Array<{ target: Address; data: Hex }>): TransactionJson => ({
    from: devnet.deployment.deployer,
    to: forwarder,
    data: encodeFunctionData({ abi: forwarderAbi, functionName: "execute", args: [calls] }),
    gas: GAS,
  });

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 100, seed: "hand-flags" });
    const actions = stakingActions(devnet.client, devnet.deployment);
    const { addresses } = devnet.deployment;
    const hash = await devnet.client.deployContract({
      abi: forwarderAbi,
      bytecode: forwarderBytecode,
      account: devnet.deployment.deployer,
      chain: null,
    });
    // The scenario mines blocks itself (no automine).
    await devnet.client.mine({ blocks: 1 });
    forwarder = (await devnet.client.getTransactionReceipt({ hash })).contractAddress!;
    const approve = (target: Address) => ({
      target,
      data: encodeFunctionData({
        abi: s1CitizenAbi,
        functionName: "setApprovalForAll",
        args: [addresses.staker, true],
      }),
    });
    await actions.mine([through([approve(addresses.s1Citizen), approve(addresses.vault)])]);

    let id = 90_000n;
    const mints: TransactionJson[] = [];
    for (const withVault of [true, false]) {
      for (const claim of [true, false]) {
        const citizenId = id++;
        const vaultId = withVault ? citizenId : 0n;
        if (withVault) {
          mints.push(
            deployerTx(
              addresses.vault,
              encodeFunctionData({
                abi: vaultAbi,
                functionName: "mint",
                args: [forwarder, vaultId, "High"],
              }),
            ),
          );
        }
        mints.push(
          deployerTx(
            addresses.identity,
            encodeFunctionData({
              abi: identityAbi,
              functionName: "setClasses",
              args: [[citizenId], [HAND_CLASS]],
            }),
          ),
          deployerTx(
            addresses.s1Citizen,
            encodeFunctionData({
              abi: s1CitizenAbi,
              functionName: "mint",
              args: [forwarder, citizenId, citizenId, vaultId, 1n, 1n, UNMAPPED_RATE],
            }),
          ),
        );
        cases.push({
          label: `${claim ? "with" : "without"} the claim, ${withVault ? "a component vault" : "no vault"}`,
          citizenId,
          vaultId,
          claim,
        });
      }
    }
    await actions.mine(mints);
    // One transaction stakes all four through the wallet: the trace must tell them apart.
    await actions.mine([
      through(
        cases.map((each) => ({
          target: addresses.staker,
          data: stakeCalldata(
            STAKER_ASSET_ID.s1_citizen,
            0,
            each.citizenId,
            0n,
            each.claim ? 1n : 0n,
          ),
        })),
      ),
    ]);
    head = await devnet.client.getBlockNumber();
  });

  afterAll(async () => {
    for (const harness of harnesses) await harness.cleanup();
    await devnet?.stop();
  });

  /** The multiplier the staker applied: "?" for a claim, else the vault's configured one, else 100. */
  const appliedMultiplier = async (each: (typeof cases)[number]) => {
    const read = (functionName: "vaultCreditMultiplier" | "getConfiguredVaultMultiplier") =>
      devnet.client.readContract({
        address: devnet.deployment.addresses.staker,
        abi: neoTokyoStakerAbi,
        functionName,
        args: [functionName === "vaultCreditMultiplier" ? "?" : each.vaultId] as never,
        blockNumber: head,
      }) as Promise<bigint>;
    if (each.claim) return read("vaultCreditMultiplier");
    return each.vaultId !== 0n ? read("getConfiguredVaultMultiplier") : 100n;
  };

  const indexThrough = async (label: string, rpcUrl: string) => {
    const harness = await indexDevnet(devnet, { label, rpcUrl, to: head });
    harnesses.push(harness);
    return harness;
  };

  const storedStake = async (harness: TestIndexer, citizenId: bigint) => {
    const [row] = await harness.indexer.database.db
      .select()
      .from(citizenStakes)
      .where(and(eq(citizenStakes.season, 1), eq(citizenStakes.citizenId, citizenId)));
    return row!;
  };

  test("the flag comes from the call trace and the applied multiplier matches the staker's", async () => {
    const harness = await indexThrough("hand-trace", devnet.node.rpcUrl);
    for (const each of cases) {
      const row = await storedStake(harness, each.citizenId);
      expect({
        case: each.label,
        multiplier: row.vaultMultiplier,
        source: row.handClaimSource,
      }).toEqual({
        case: each.label,
        multiplier: await appliedMultiplier(each),
        source: "trace",
      });
      expect(row.identityPoints).toBe(0n);
    }
    expect(await harness.mismatches([forwarder.toLowerCase()])).toEqual([]);
  });

  /** The record the API serves for the case's citizen. */
  const servedRecord = async (api: ApiHarness, each: (typeof cases)[number]) => {
    const response = await api.request(
      `/v1/staking/citizens/s1/${each.citizenId}?address=${forwarder}`,
    );
    expect(response.status).toBe(200);
    return (await response.json()) as { vault: { multiplier: number }; inferred?: string[] };
  };

  test("a node without a trace API leaves the flag inferred: counted in status, marked in the record, settled once traces come", async () => {
    const refused = { code: -32601, message: "the method does not exist/is not available" };
    const proxy = startRpcFaultProxy({
      upstream: devnet.node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      refuseMethods: { debug_traceTransaction: refused, trace_transaction: refused },
    });
    try {
      const harness = await indexThrough("hand-inferred", proxy.url);
      for (const each of cases) {
        const row = await storedStake(harness, each.citizenId);
        expect(row.handClaimSource).toBe("inferred");
        expect(row.handClaim).toBe(false);
      }
      // Points and positions still equal the staker's; only the claimed multiplier is unknown.
      expect(await harness.mismatches([forwarder.toLowerCase()])).toEqual([]);
      const status = await harness.cli(["status"], { RPC_URL: proxy.url });
      expect(status.stdout).toMatch(/hand flags\s+4 inferred/);

      const api = await createApiHarness({ databaseUrl: harness.database.url });
      try {
        for (const each of cases) {
          const record = await servedRecord(api, each);
          expect({ case: each.label, inferred: record.inferred }).toEqual({
            case: each.label,
            inferred: ["vault.multiplier"],
          });
        }
        const listed = await harness.cli(["read-failures"], { RPC_URL: proxy.url });
        expect(listed.stdout.match(/hand flag\s.*inferred/g)).toHaveLength(cases.length);

        // Still no traces: nothing settles, nothing changes.
        const refusedAgain = await harness.cli(["read-failures", "--retry"], {
          RPC_URL: proxy.url,
        });
        expect(refusedAgain.stdout).toContain("0 settled, 4 still inferred");

        // The node offers traces now: the flags are read and the applied multipliers written.
        const before = (await harness.indexer.store.checkpoint())!.updatedAt;
        const settled = await harness.cli(["read-failures", "--retry"], {
          RPC_URL: devnet.node.rpcUrl,
        });
        expect(settled.stdout).toContain("4 settled, 0 still inferred");
        expect((await harness.indexer.store.checkpoint())!.updatedAt).not.toEqual(before);
        for (const each of cases) {
          const row = await storedStake(harness, each.citizenId);
          const applied = await appliedMultiplier(each);
          expect({
            case: each.label,
            multiplier: row.vaultMultiplier,
            source: row.handClaimSource,
          }).toEqual({ case: each.label, multiplier: applied, source: "trace" });
          const record = await servedRecord(api, each);
          expect({
            case: each.label,
            served: record.vault.multiplier,
            inferred: record.inferred,
          }).toEqual({ case: each.label, served: Number(applied), inferred: undefined });
        }
        expect(await harness.mismatches([forwarder.toLowerCase()])).toEqual([]);
        const after = await harness.cli(["status"], { RPC_URL: devnet.node.rpcUrl });
        expect(after.stdout).toMatch(/hand flags\s+0 inferred/);
      } finally {
        await api.close();
      }
    } finally {
      proxy.stop();
    }
  });
});
