/**
 * Token URIs are read many to an eth_call (indexer/chain/static-call-batch.ts), and a metadata
 * contract that reverts, answers garbage or halts must cost no healthy citizen its metadata and
 * leave the same failure records the single-call path leaves. The oracle for every reading is
 * that single call (a read alone, block-reads.ts), made beside the batch against the same node and block.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeFunctionResult, encodeFunctionData, type Hex, type PublicClient } from "viem";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { type DevnetDeployment, deployDevnet } from "../../devnet/deploy.ts";
import { createBlockReads } from "../../indexer/chain/block-reads.ts";
import { classifyCallFailure, ReadReverted } from "../../indexer/chain/call-failure.ts";
import {
  type CitizenKey,
  type CitizenReading,
  readCitizens,
  readTokenUris,
  type TokenUriReading,
} from "../../indexer/chain/citizen-reads.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import {
  readStaticCalls,
  STATIC_CALL_BATCH,
  type StaticCall,
} from "../../indexer/chain/static-call-batch.ts";
import { identityAbi, s1CitizenAbi, s2CitizenAbi } from "../../indexer/chain/token-abis.ts";
import { metadataOf } from "../../indexer/project/citizen-row.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { stakingActions } from "../support/staking.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

/** CitizenMetadata's faults (contracts/src/CitizenMetadata.sol) and what the operator is shown. */
const FAULTS = [
  { fault: 1, unreadable: "tokenURI reverted: no data" },
  { fault: 2, unreadable: "tokenURI reverted: CitizenMetadata: metadata unavailable" },
  { fault: 3, unreadable: "tokenURI reverted: custom error 0xd6b0986c" },
  { fault: 4, unreadable: "tokenURI reverted: Panic(0x01)" },
  { fault: 5, unreadable: "tokenURI reverted: EVM error InvalidFEOpcode" },
  { fault: 6, unreadable: "tokenURI's JSON does not parse" },
  { fault: 7, unreadable: /^tokenURI is not inline JSON: https:/ },
  { fault: 8, unreadable: "tokenURI is empty" },
] as const;
const INVALID_OPCODE = 5;

/** Healthy citizens: S1 1000.., S2 2000..; S1 citizen 100 + fault has that fault; 200.. halt. */
const HEALTHY_S1 = 120;
const HEALTHY_S2 = 30;
const s1 = (citizenId: bigint): CitizenKey => ({ season: 1, citizenId });
const s2 = (citizenId: bigint): CitizenKey => ({ season: 2, citizenId });
const healthyS1 = Array.from({ length: HEALTHY_S1 }, (_, i) => s1(1_000n + BigInt(i)));
const healthyS2 = Array.from({ length: HEALTHY_S2 }, (_, i) => s2(2_000n + BigInt(i)));
const faulty = FAULTS.map(({ fault }) => s1(100n + BigInt(fault)));
const S2_REVERTING = s2(2_999n);
const halting = [200n, 201n, 202n].map(s1);
/** Three halts between healthy citizens: a plain aggregate3 has nothing left for the ten after. */
const haltsInTheMiddle = [...healthyS1.slice(0, 10), ...halting, ...healthyS1.slice(10, 20)];

let node: AnvilNode;
let devnet: DevnetClient;
let deployment: DevnetDeployment;
let oracle: PublicClient;
let block: bigint;

beforeAll(async () => {
  node = await startAnvil();
  devnet = createDevnetClient(node.rpcUrl);
  deployment = await deployDevnet(devnet);
  const actions = stakingActions(devnet, deployment);
  const owner = deployment.deployer;
  await actions.mine([
    ...[...healthyS1, ...faulty, ...halting].map((key) => actions.mintS1(owner, key.citizenId)),
    ...[...healthyS2, S2_REVERTING].map((key) => actions.mintS2(owner, key.citizenId)),
    ...FAULTS.map(({ fault }) => actions.setMetadataFault(1, 100n + BigInt(fault), fault)),
    ...halting.map((key) => actions.setMetadataFault(1, key.citizenId, INVALID_OPCODE)),
    actions.setMetadataFault(2, S2_REVERTING.citizenId, 1),
  ]);
  block = await devnet.getBlockNumber({ cacheTime: 0 });
  oracle = createChainClient(node.rpcUrl, { retryCount: 0 });
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

/**
 * A chain client whose eth_calls are counted, as the indexer's metrics count them. No transport
 * retries, here and in the oracle: anvil answers a halt with -32603, which viem's transport retries
 * with backoff (6 s a halt), and each test meets the first answer anyway.
 */
function countingClient(rpcUrl: string) {
  const calls = { eth_call: 0 };
  const client = createChainClient(rpcUrl, {
    retryCount: 0,
    observer: {
      call(method) {
        if (method === "eth_call") calls.eth_call++;
      },
      httpResponse() {},
    },
  });
  return { client, calls };
}

const citizenAddress = (key: CitizenKey) =>
  key.season === 1 ? deployment.addresses.s1Citizen : deployment.addresses.s2Citizen;

/** What the single-call path reads (one eth_call, the node's full gas). */
async function readAlone(key: CitizenKey, at = block): Promise<TokenUriReading> {
  try {
    return {
      uri: await createBlockReads(oracle, { batching: "alone" }).read({
        address: citizenAddress(key),
        abi: s1CitizenAbi,
        functionName: "tokenURI",
        args: [key.citizenId],
        blockNumber: at,
      }),
    };
  } catch (error) {
    if (error instanceof ReadReverted) return { reverted: error.reason };
    throw error;
  }
}

const readAllAlone = (keys: readonly CitizenKey[], at = block) =>
  Promise.all(keys.map((key) => readAlone(key, at)));

const tokenUriCall = (key: CitizenKey): StaticCall => ({
  to: citizenAddress(key),
  data: encodeFunctionData({ abi: s1CitizenAbi, functionName: "tokenURI", args: [key.citizenId] }),
});

/** Fault keys spread between healthy ones: healthy, fault, healthy, fault, ... */
function interleave(healthy: CitizenKey[], broken: CitizenKey[]): CitizenKey[] {
  return healthy.flatMap((key, i) => (i < broken.length ? [key, broken[i]!] : [key]));
}

/** Each component getter of a citizen read alone, in an eth_call of its own. */
async function componentsAlone(client: PublicClient, key: CitizenKey) {
  const at = { blockNumber: block };
  const reads = createBlockReads(client, { batching: "alone" });
  const address = citizenAddress(key);
  const abi = key.season === 1 ? s1CitizenAbi : s2CitizenAbi;
  const read = (
    functionName: "getIdentityIdOfTokenId" | "getItemCacheIdOfTokenId" | "getLandDeedIdOfTokenId",
  ) => reads.read({ address, abi, functionName, args: [key.citizenId], ...at });
  const identityId = await read("getIdentityIdOfTokenId");
  const common = {
    season: key.season,
    citizenId: key.citizenId,
    identityId,
    itemCacheId: await read("getItemCacheIdOfTokenId"),
    landDeedId: await read("getLandDeedIdOfTokenId"),
  };
  if (key.season === 2) return common;
  const s1 = (functionName: "getVaultIdOfTokenId" | "getRewardRateOfTokenId") =>
    reads.read({ address, abi: s1CitizenAbi, functionName, args: [key.citizenId], ...at });
  return {
    ...common,
    componentVaultId: await s1("getVaultIdOfTokenId"),
    rewardRate: await s1("getRewardRateOfTokenId"),
    identityClass: await reads.read({
      address: deployment.addresses.identity,
      abi: identityAbi,
      functionName: "getClass",
      args: [identityId],
      ...at,
    }),
  };
}

describe("citizens' components many to an eth_call", () => {
  const keys = [...healthyS1, ...healthyS2];
  const withoutUri = ({ tokenUri: _, ...components }: CitizenReading) => components;

  test("every getter of 150 citizens in a few eth_calls, each value the single read's", async () => {
    const { client, calls } = countingClient(node.rpcUrl);
    const readings = await readCitizens(client, deployment.addresses, keys, block);
    const alone = await Promise.all(keys.map((key) => componentsAlone(oracle, key)));
    expect(readings.map(withoutUri)).toEqual(alone);
    expect(readings.some((reading) => reading.componentVaultId !== 0n)).toBe(true);
    // 120 × 5 + 30 × 3 getters in 7 eth_calls, 120 classes in 2, 150 tokenURIs in 3.
    expect(calls.eth_call).toBe(7 + 2 + 3);
  });

  test("a node that refuses state overrides reads them through viem's multicall, the same values", async () => {
    const proxy = startRpcFaultProxy({
      upstream: node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      refuseStateOverride: { code: -32602, message: "too many arguments, want at most 2" },
    });
    try {
      const few = [...healthyS1.slice(0, 3), ...healthyS2.slice(0, 2)];
      const { client } = countingClient(proxy.url);
      const readings = await readCitizens(client, deployment.addresses, few, block);
      expect(readings.map(withoutUri)).toEqual(
        await Promise.all(few.map((key) => componentsAlone(oracle, key))),
      );
      // The components, the classes and the tokenURIs: one refused batch each.
      expect(proxy.counts.refusedStateOverrides).toBe(3);
    } finally {
      proxy.stop();
    }
  });
});

describe("token URIs many to an eth_call", () => {
  test("N healthy citizens of both seasons take ceil(N / batch) eth_calls and read as alone", async () => {
    const keys = [...healthyS1, ...healthyS2];
    const { client, calls } = countingClient(node.rpcUrl);
    const readings = await readTokenUris(client, deployment.addresses, keys, block);
    expect(readings).toEqual(await readAllAlone(keys));
    expect(readings.every((reading) => "uri" in reading && reading.uri !== "")).toBe(true);
    // 150 citizens: 3 eth_calls where the single-call path made 150.
    expect(calls.eth_call).toBe(Math.ceil(keys.length / STATIC_CALL_BATCH.callsPerBatch));
  });

  test("every metadata fault in a batch with healthy citizens: the healthy keep their metadata, the faults the single call's records", async () => {
    const keys = interleave(healthyS1.slice(0, 12), [...faulty, S2_REVERTING]);
    const { client, calls } = countingClient(node.rpcUrl);
    const readings = await readTokenUris(client, deployment.addresses, keys, block);
    expect(readings).toEqual(await readAllAlone(keys));

    const unreadable = (key: CitizenKey) => metadataOf(readings[keys.indexOf(key)]!).unreadable;
    for (const [i, { unreadable: expected }] of FAULTS.entries()) {
      if (typeof expected === "string") expect(unreadable(faulty[i]!)).toBe(expected);
      else expect(unreadable(faulty[i]!)).toMatch(expected);
    }
    expect(unreadable(S2_REVERTING)).toBe("tokenURI reverted: no data");
    for (const key of healthyS1.slice(0, 12)) {
      expect(metadataOf(readings[keys.indexOf(key)]!).name).toBe(`Citizen #${key.citizenId}`);
    }
    // One batch, and each call that failed (faults 1-5 and the S2 revert) read again alone.
    expect(calls.eth_call).toBe(1 + 6);
  });

  test("citizens halting in the middle of a batch do not starve the calls after them", async () => {
    const keys = haltsInTheMiddle;
    const { client, calls } = countingClient(node.rpcUrl);
    const answers = await readStaticCalls(client, keys.map(tokenUriCall), block);
    expect(calls.eth_call).toBe(1);
    const alone = await readAllAlone(keys);
    expect(
      answers.map((data) => (data === undefined ? undefined : { uri: decodeTokenUri(data) })),
    ).toEqual(alone.map((reading) => ("uri" in reading ? reading : undefined)));
    expect(answers.filter((data) => data === undefined)).toHaveLength(halting.length);
  });

  test("the same batch through a plain aggregate3 multicall starves the calls after the halts", async () => {
    const results = await oracle.multicall({
      contracts: haltsInTheMiddle.map((key) => ({
        address: citizenAddress(key),
        abi: s1CitizenAbi,
        functionName: "tokenURI",
        args: [key.citizenId],
      })),
      allowFailure: true,
      blockNumber: block,
      deployless: true,
      batchSize: 0,
    });
    // The halts leave the calls after them (and here aggregate3 itself) too little gas to finish.
    expect(results.slice(10 + halting.length).map((result) => result.status)).toEqual(
      Array(10).fill("failure"),
    );
  });

  test("a node that refuses state overrides is read one call at a time, with the same readings", async () => {
    const proxy = startRpcFaultProxy({
      upstream: node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      // What go-ethereum's RPC layer answers a method given more parameters than it takes.
      refuseStateOverride: { code: -32602, message: "too many arguments, want at most 2" },
    });
    try {
      const keys = interleave(healthyS1.slice(0, 4), faulty);
      const { client, calls } = countingClient(proxy.url);
      const readings = await readTokenUris(client, deployment.addresses, keys, block);
      expect(readings).toEqual(await readAllAlone(keys));
      expect(proxy.counts.refusedStateOverrides).toBe(1);
      expect(calls.eth_call).toBe(1 + keys.length);
    } finally {
      proxy.stop();
    }
  });

  test("connection trouble on a batch is thrown for the job's retry, not read call by call", async () => {
    const proxy = startRpcFaultProxy({ upstream: node.rpcUrl, faultRate: 1, holdMs: 0 });
    try {
      const { client, calls } = countingClient(proxy.url);
      const keys = healthyS1.slice(0, 5);
      let thrown: unknown;
      try {
        await readTokenUris(client, deployment.addresses, keys, block);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeDefined();
      expect(classifyCallFailure(thrown)).toEqual({ reverted: false });
      expect(proxy.counts.error).toBe(1);
      expect(calls.eth_call).toBe(1);
    } finally {
      proxy.stop();
    }
  });

  // Last: lowering the block gas limit changes every later block's eth_call gas on anvil.
  test("a node giving an eth_call little gas: the batch goes on over more eth_calls, or call by call", async () => {
    const keys = [...healthyS1.slice(0, 5), ...halting, ...healthyS1.slice(5, 10)];
    const expected = await readAllAlone(keys);

    // 25M: two halts burn their caps, then the reader stops and the rest go in a second eth_call.
    await devnet.setBlockGasLimit({ gasLimit: 25_000_000n });
    const roomy = await devnet.mine({ blocks: 1 }).then(() => devnet.getBlockNumber());
    const first = countingClient(node.rpcUrl);
    const answers = await readStaticCalls(first.client, keys.map(tokenUriCall), roomy);
    expect(answers.filter((data) => data !== undefined)).toHaveLength(10);
    expect(first.calls.eth_call).toBe(2);
    const readings = await readTokenUris(oracle, deployment.addresses, keys, roomy);
    expect(readings).toEqual(await readAllAlone(keys, roomy));
    expect(readings).toEqual(expected);

    // 5M is below one call's cap: the reader answers nothing and each call goes alone.
    await devnet.setBlockGasLimit({ gasLimit: 5_000_000n });
    const tight = await devnet.mine({ blocks: 1 }).then(() => devnet.getBlockNumber());
    const second = countingClient(node.rpcUrl);
    const tightReadings = await readTokenUris(second.client, deployment.addresses, keys, tight);
    expect(tightReadings).toEqual(expected);
    expect(second.calls.eth_call).toBe(1 + keys.length);
  });
});

const decodeTokenUri = (data: Hex) =>
  decodeFunctionResult({ abi: s1CitizenAbi, functionName: "tokenURI", data });
