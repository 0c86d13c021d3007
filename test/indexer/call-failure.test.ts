/**
 * Every way an eth_call failed on anvil, through the two paths the indexer reads by (readContract
 * folded into the deployless multicall, and `call` with batching off), recorded as the error chain
 * viem throws, then classified. The citizens' metadata fault switch makes each revert shape on a
 * real contract; a proxy in front of the node makes the transient ones and the shapes other nodes
 * answer with.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type Address,
  encodeErrorResult,
  encodeFunctionData,
  type Hex,
  type PublicClient,
  parseEther,
  RpcRequestError,
} from "viem";
import {
  identityAbi as fixtureIdentityAbi,
  s1CitizenAbi as fixtureS1CitizenAbi,
  s2CitizenAbi as fixtureS2CitizenAbi,
} from "../../contracts/generated/index.ts";
import { type AnvilNode, freePort, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { DEVNET_DEPLOYER, type DevnetDeployment, deployDevnet } from "../../devnet/deploy.ts";
import { createBlockReads } from "../../indexer/chain/block-reads.ts";
import {
  type CallFailure,
  classifyCallFailure,
  ReadReverted,
} from "../../indexer/chain/call-failure.ts";
import { readCitizens } from "../../indexer/chain/citizen-reads.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import { s1CitizenAbi } from "../../indexer/chain/token-abis.ts";
import { metadataOf } from "../../indexer/project/citizen-row.ts";
import { startLyingNode } from "../support/lying-node.ts";
import { type RpcErrorAnswer, startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

class CallDidNotFail extends Error {
  override name = "CallDidNotFail";
}

/** CitizenMetadata's fault values (contracts/src/CitizenMetadata.sol). */
const Fault = {
  NORMAL: 0,
  REVERT_EMPTY: 1,
  REVERT_REASON: 2,
  REVERT_CUSTOM_ERROR: 3,
  REVERT_PANIC: 4,
  INVALID_OPCODE: 5,
  MALFORMED_JSON: 6,
  OFFCHAIN_URI: 7,
  EMPTY_URI: 8,
} as const;

/** Citizen ids: one S1 citizen per fault, plus an S2 citizen and an identity that refuse. */
const s1CitizenWith = (fault: number) => 100n + BigInt(fault);
const S2_REVERTING_CITIZEN = 200n;
const REVERTING_IDENTITY = 300n;
const CITIZEN_WITH_REVERTING_IDENTITY = 301n;

let node: AnvilNode;
let devnet: DevnetClient;
let deployment: DevnetDeployment;
let chain: PublicClient;
let block: bigint;

beforeAll(async () => {
  node = await startAnvil();
  devnet = createDevnetClient(node.rpcUrl);
  deployment = await deployDevnet(devnet);
  const { s1Citizen, s2Citizen, identity } = deployment.addresses;
  const owner = DEVNET_DEPLOYER;
  await devnet.setBalance({ address: owner, value: parseEther("1000") });
  const send = async (hash: Promise<Hex>) => {
    const receipt = await devnet.waitForTransactionReceipt({ hash: await hash });
    if (receipt.status !== "success")
      throw new Error(`setup transaction ${receipt.transactionHash} reverted`);
  };
  for (const fault of Object.values(Fault)) {
    const id = s1CitizenWith(fault);
    await send(
      devnet.writeContract({
        address: s1Citizen,
        abi: fixtureS1CitizenAbi,
        functionName: "mint",
        args: [owner, id, id, 0n, 1n, 1n, 3n],
        account: owner,
      }),
    );
    await send(
      devnet.writeContract({
        address: s1Citizen,
        abi: fixtureS1CitizenAbi,
        functionName: "setMetadataFault",
        args: [id, fault],
        account: owner,
      }),
    );
  }
  await send(
    devnet.writeContract({
      address: s2Citizen,
      abi: fixtureS2CitizenAbi,
      functionName: "mint",
      args: [owner, S2_REVERTING_CITIZEN, 1n, 1n, 1n],
      account: owner,
    }),
  );
  await send(
    devnet.writeContract({
      address: s2Citizen,
      abi: fixtureS2CitizenAbi,
      functionName: "setMetadataFault",
      args: [S2_REVERTING_CITIZEN, Fault.REVERT_EMPTY],
      account: owner,
    }),
  );
  await send(
    devnet.writeContract({
      address: s1Citizen,
      abi: fixtureS1CitizenAbi,
      functionName: "mint",
      args: [owner, CITIZEN_WITH_REVERTING_IDENTITY, REVERTING_IDENTITY, 0n, 1n, 1n, 3n],
      account: owner,
    }),
  );
  await send(
    devnet.writeContract({
      address: identity,
      abi: fixtureIdentityAbi,
      functionName: "setClassReverts",
      args: [REVERTING_IDENTITY, true],
      account: owner,
    }),
  );
  // Not the cached number the receipt polling may have left behind.
  block = await devnet.getBlockNumber({ cacheTime: 0 });
  // No transport retries: each test meets the first answer the node gives.
  chain = createChainClient(node.rpcUrl, { retryCount: 0, timeoutMs: 500 });
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

async function failureOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new CallDidNotFail("expected the call to fail, but it succeeded");
}

/** The error chain as names, outermost first (the node's raw error object is not an Error). */
function chainOf(error: unknown): string[] {
  const names: string[] = [];
  for (let cause = error; cause instanceof Error; cause = cause.cause) names.push(cause.name);
  return names;
}

/** What the node itself answered, when the chain carries its JSON-RPC error. */
function nodeAnswer(error: unknown): { code: number; message: string } | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof RpcRequestError) return { code: cause.code, message: cause.details };
  }
  return undefined;
}

/** With the indexer's ABI by default, or the fixture's own (which declares its custom errors). */
const batchedTokenUri = (
  client: PublicClient,
  id: bigint,
  abi: typeof s1CitizenAbi | typeof fixtureS1CitizenAbi = s1CitizenAbi,
) =>
  client.readContract({
    address: deployment.addresses.s1Citizen,
    abi,
    functionName: "tokenURI",
    args: [id],
    blockNumber: block,
  });

/** As a read alone (indexer/chain/block-reads.ts) sends it, before its own classification. */
const unbatchedTokenUri = (client: PublicClient, id: bigint) =>
  client.call({
    to: deployment.addresses.s1Citizen,
    data: encodeFunctionData({ abi: s1CitizenAbi, functionName: "tokenURI", args: [id] }),
    blockNumber: block,
    batch: false,
  });

const BATCHED_REVERT = [
  "ContractFunctionExecutionError",
  "ContractFunctionRevertedError",
  "CallExecutionError",
  "ExecutionRevertedError",
  "RawContractError",
];
const UNBATCHED_REVERT = ["CallExecutionError", "ExecutionRevertedError", "RpcRequestError"];

describe("a tokenURI that refuses is a revert on both read paths", () => {
  const cases = [
    {
      fault: Fault.REVERT_EMPTY,
      shape: "revert with empty data",
      batched: { chain: BATCHED_REVERT, reason: "no data" },
      unbatched: {
        chain: UNBATCHED_REVERT,
        node: { code: 3, message: "execution reverted" },
        reason: "no data",
      },
    },
    {
      fault: Fault.REVERT_REASON,
      shape: "revert with a reason string",
      batched: { chain: BATCHED_REVERT, reason: "CitizenMetadata: metadata unavailable" },
      unbatched: {
        chain: UNBATCHED_REVERT,
        node: { code: 3, message: "execution reverted: CitizenMetadata: metadata unavailable" },
        reason: "CitizenMetadata: metadata unavailable",
      },
    },
    {
      fault: Fault.REVERT_CUSTOM_ERROR,
      shape: "revert with a custom error the caller's ABI does not know",
      batched: {
        // viem tries the call's ABI first and records that the selector is not in it.
        chain: [
          "ContractFunctionExecutionError",
          "ContractFunctionRevertedError",
          "AbiErrorSignatureNotFoundError",
          ...BATCHED_REVERT.slice(2),
        ],
        reason: "custom error 0xd6b0986c",
      },
      unbatched: {
        chain: UNBATCHED_REVERT,
        node: {
          code: 3,
          message: `execution reverted: custom error 0xd6b0986c: ${"\u0000".repeat(31)}\u0067`,
        },
        reason: "custom error 0xd6b0986c",
      },
    },
    {
      fault: Fault.REVERT_PANIC,
      shape: "a Panic (assert)",
      batched: { chain: BATCHED_REVERT, reason: "Panic(0x01)" },
      unbatched: {
        chain: UNBATCHED_REVERT,
        node: { code: 3, message: "execution reverted: panic: assertion failed (0x01)" },
        reason: "Panic(0x01)",
      },
    },
    {
      fault: Fault.INVALID_OPCODE,
      shape: "an invalid-opcode halt",
      // Inside the multicall a halt is a failed call that returned nothing.
      batched: { chain: BATCHED_REVERT, reason: "no data" },
      unbatched: {
        chain: ["CallExecutionError", "InternalRpcError", "RpcRequestError"],
        node: { code: -32603, message: "EVM error InvalidFEOpcode" },
        reason: "EVM error InvalidFEOpcode",
      },
    },
  ];

  for (const { fault, shape, batched, unbatched } of cases) {
    test(`${shape}: readContract through the multicall`, async () => {
      const error = await failureOf(batchedTokenUri(chain, s1CitizenWith(fault)));
      expect(chainOf(error)).toEqual(batched.chain);
      expect(classifyCallFailure(error)).toEqual({ reverted: true, reason: batched.reason });
    });

    test(`${shape}: call without batching`, async () => {
      const error = await failureOf(unbatchedTokenUri(chain, s1CitizenWith(fault)));
      expect(chainOf(error)).toEqual(unbatched.chain);
      expect(nodeAnswer(error)).toEqual(unbatched.node);
      expect(classifyCallFailure(error)).toEqual({ reverted: true, reason: unbatched.reason });
    });
  }

  test("a custom error is named when the ABI knows it, on either path", async () => {
    const id = s1CitizenWith(Fault.REVERT_CUSTOM_ERROR);
    const batched = await failureOf(batchedTokenUri(chain, id, fixtureS1CitizenAbi));
    expect(classifyCallFailure(batched)).toEqual({
      reverted: true,
      reason: `MetadataUnavailable(${id})`,
    });
    const unbatched = await failureOf(unbatchedTokenUri(chain, id));
    expect(classifyCallFailure(unbatched, fixtureS1CitizenAbi)).toEqual({
      reverted: true,
      reason: `MetadataUnavailable(${id})`,
    });
  });

  test("a view of an address without code returned nothing, which no retry changes", async () => {
    const empty: Address = "0x000000000000000000000000000000000000dead";
    const request = {
      address: empty,
      abi: s1CitizenAbi,
      functionName: "tokenURI",
      args: [1n],
      blockNumber: block,
    } as const;
    const batched = await failureOf(chain.readContract(request));
    expect(chainOf(batched)).toEqual([
      "ContractFunctionExecutionError",
      "ContractFunctionZeroDataError",
      "AbiDecodingZeroDataError",
    ]);
    expect(classifyCallFailure(batched)).toEqual({ reverted: true, reason: "returned no data" });
    const unbatched = await failureOf(createBlockReads(chain, { batching: "alone" }).read(request));
    expect(unbatched).toBeInstanceOf(ReadReverted);
    expect((unbatched as ReadReverted).reason).toBe("returned no data");
  });
});

describe("the chain layer's reads throw ReadReverted naming the call", () => {
  test("a read alone: tokenURI with a reason", async () => {
    const id = s1CitizenWith(Fault.REVERT_REASON);
    const error = await failureOf(
      createBlockReads(chain, { batching: "alone" }).read({
        address: deployment.addresses.s1Citizen,
        abi: s1CitizenAbi,
        functionName: "tokenURI",
        args: [id],
        blockNumber: block,
      }),
    );
    expect(error).toBeInstanceOf(ReadReverted);
    const reverted = error as ReadReverted;
    expect(reverted).toMatchObject({
      address: deployment.addresses.s1Citizen,
      functionName: "tokenURI",
      args: [id],
      blockNumber: block,
      reason: "CitizenMetadata: metadata unavailable",
    });
    expect(reverted.message).toBe(
      `tokenURI(${id}) on ${deployment.addresses.s1Citizen} at block ${block} reverted: ` +
        "CitizenMetadata: metadata unavailable",
    );
  });

  test("a batched read: a getClass the points depend on", async () => {
    const error = await failureOf(
      createBlockReads(chain).read({
        address: deployment.addresses.identity,
        abi: fixtureIdentityAbi,
        functionName: "getClass",
        args: [REVERTING_IDENTITY],
        blockNumber: block,
      }),
    );
    expect(error).toBeInstanceOf(ReadReverted);
    expect((error as ReadReverted).reason).toBe("Identity: class unavailable");
  });

  test("readCitizens falls back for every broken tokenURI and still stops on a refused getClass", async () => {
    const contracts = { ...deployment.addresses };
    const brokenS1 = Object.values(Fault)
      .filter((fault) => fault !== Fault.NORMAL)
      .map((fault) => ({ season: 1 as const, citizenId: s1CitizenWith(fault) }));
    const rows = await readCitizens(
      chain,
      contracts,
      [
        { season: 1, citizenId: s1CitizenWith(Fault.NORMAL) },
        ...brokenS1,
        { season: 2, citizenId: S2_REVERTING_CITIZEN },
      ],
      block,
    );
    expect(rows.map((row) => [row.citizenId, metadataOf(row.tokenUri).name])).toEqual([
      [s1CitizenWith(Fault.NORMAL), `Citizen #${s1CitizenWith(Fault.NORMAL)}`],
      ...brokenS1.map(({ citizenId }) => [citizenId, undefined]),
      [S2_REVERTING_CITIZEN, undefined],
    ]);
    const error = await failureOf(
      readCitizens(
        chain,
        contracts,
        [{ season: 1, citizenId: CITIZEN_WITH_REVERTING_IDENTITY }],
        block,
      ),
    );
    expect(error).toBeInstanceOf(ReadReverted);
    expect((error as ReadReverted).functionName).toBe("getClass");
  });
});

describe("reads named by block hash throw the same ReadReverted", () => {
  test("batched reads, reads alone and readCitizens at the block's hash", async () => {
    const lying = startLyingNode(node.rpcUrl);
    try {
      const client = createChainClient(lying.url);
      const at = {
        blockNumber: block,
        blockHash: (await chain.getBlock({ blockNumber: block })).hash,
      };
      const getClass = await failureOf(
        createBlockReads(client).read({
          address: deployment.addresses.identity,
          abi: fixtureIdentityAbi,
          functionName: "getClass",
          args: [REVERTING_IDENTITY],
          ...at,
        }),
      );
      expect(getClass).toBeInstanceOf(ReadReverted);
      expect((getClass as ReadReverted).reason).toBe("Identity: class unavailable");
      const tokenUri = await failureOf(
        createBlockReads(client, { batching: "alone" }).read({
          address: deployment.addresses.s1Citizen,
          abi: s1CitizenAbi,
          functionName: "tokenURI",
          args: [s1CitizenWith(Fault.REVERT_REASON)],
          ...at,
        }),
      );
      expect((tokenUri as ReadReverted).reason).toBe("CitizenMetadata: metadata unavailable");
      const rows = await readCitizens(
        client,
        deployment.addresses,
        [
          { season: 1, citizenId: s1CitizenWith(Fault.NORMAL) },
          { season: 2, citizenId: S2_REVERTING_CITIZEN },
        ],
        at,
      );
      expect(rows.map((row) => metadataOf(row.tokenUri).name)).toEqual([
        `Citizen #${s1CitizenWith(Fault.NORMAL)}`,
        undefined,
      ]);
      expect(lying.counts.byHash).toBeGreaterThan(0);
      expect(lying.counts.byNumber).toBe(0);
    } finally {
      lying.stop();
    }
  });
});

describe("failures a retry may fix are transient", () => {
  test("the node cannot be reached", async () => {
    const unreachable = createChainClient(`http://127.0.0.1:${await freePort()}`, {
      retryCount: 0,
    });
    for (const error of [
      await failureOf(batchedTokenUri(unreachable, s1CitizenWith(Fault.NORMAL))),
      await failureOf(unbatchedTokenUri(unreachable, s1CitizenWith(Fault.NORMAL))),
    ]) {
      expect(chainOf(error)).toContain("HttpRequestError");
      expect(classifyCallFailure(error)).toEqual({ reverted: false });
    }
  });

  test("HTTP 502, 429, a timeout and a truncated body, on both paths", async () => {
    const proxy = startRpcFaultProxy({ upstream: node.rpcUrl, faultRate: 1, holdMs: 1_500 });
    try {
      const viaProxy = createChainClient(proxy.url, { retryCount: 0, timeoutMs: 500 });
      // The proxy serves its faults in turn: error, rate limit, timeout, truncated body.
      const expected = ["HttpRequestError", "HttpRequestError", "TimeoutError", "HttpRequestError"];
      for (const read of [batchedTokenUri, unbatchedTokenUri]) {
        for (const innermost of expected) {
          const error = await failureOf(read(viaProxy, s1CitizenWith(Fault.NORMAL)));
          expect(chainOf(error)).toContain(innermost);
          expect(classifyCallFailure(error)).toEqual({ reverted: false });
        }
      }
      expect(proxy.counts).toMatchObject({ error: 2, "rate-limit": 2, timeout: 2, truncated: 2 });
    } finally {
      proxy.stop();
    }
  });

  test("a block the node has not reached yet", async () => {
    const error = await failureOf(
      chain.readContract({
        address: deployment.addresses.s1Citizen,
        abi: s1CitizenAbi,
        functionName: "tokenURI",
        args: [s1CitizenWith(Fault.NORMAL)],
        blockNumber: block + 1_000n,
      }),
    );
    expect(nodeAnswer(error)?.code).toBe(-32602);
    expect(classifyCallFailure(error)).toEqual({ reverted: false });
  });

  test("anything that is not a viem error", () => {
    expect(classifyCallFailure(new Error("socket hang up"))).toEqual({ reverted: false });
    expect(classifyCallFailure("a string")).toEqual({ reverted: false });
  });
});

describe("other nodes' answers to eth_call, replayed through a proxy", () => {
  const reason = "Staker: no such citizen";
  const cases: { answer: RpcErrorAnswer; expected: CallFailure }[] = [
    {
      answer: { code: -32603, message: "internal error" },
      // viem wraps a bare -32603 in ContractFunctionRevertedError; it is a provider's fault.
      expected: { reverted: false },
    },
    { answer: { code: -32000, message: "header not found" }, expected: { reverted: false } },
    {
      answer: { code: -32000, message: "invalid opcode: INVALID" },
      expected: { reverted: true, reason: "invalid opcode: INVALID" },
    },
    {
      answer: { code: -32000, message: "out of gas" },
      expected: { reverted: true, reason: "out of gas" },
    },
    {
      answer: {
        code: -32000,
        message: "execution reverted",
        data: encodeErrorResult({
          abi: [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }],
          errorName: "Error",
          args: [reason],
        }),
      },
      expected: { reverted: true, reason },
    },
  ];

  for (const { answer, expected } of cases) {
    test(`${answer.code} "${answer.message}" is ${expected.reverted ? "a revert" : "transient"}`, async () => {
      const proxy = startRpcFaultProxy({
        upstream: node.rpcUrl,
        faultRate: 0,
        holdMs: 0,
        refuseMethods: { eth_call: answer },
      });
      try {
        const viaProxy = createChainClient(proxy.url, { retryCount: 0 });
        for (const read of [batchedTokenUri, unbatchedTokenUri]) {
          const error = await failureOf(read(viaProxy, s1CitizenWith(Fault.NORMAL)));
          expect(nodeAnswer(error)).toEqual({ code: answer.code, message: answer.message });
          expect(classifyCallFailure(error)).toEqual(expected);
        }
      } finally {
        proxy.stop();
      }
    });
  }
});
