/**
 * The reader contract's own rules (contracts/src/StaticCallBatch.sol), deployed on anvil and
 * pointed at the devnet citizens and their metadata faults: each call gets its cap and no more,
 * the answer is a prefix when gas or the answer's size runs short, revert data comes back as is.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type Address,
  decodeFunctionResult,
  encodeErrorResult,
  encodeFunctionData,
  encodeFunctionResult,
  type Hex,
} from "viem";
import {
  s1CitizenAbi,
  staticCallBatchAbi,
  staticCallBatchBytecode,
} from "../../contracts/generated/index.ts";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { type DevnetDeployment, deployDevnet } from "../../devnet/deploy.ts";
import { stakingActions } from "../support/staking.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

const HEALTHY = [1n, 2n, 3n, 4n];
const REVERTS_WITH_REASON = 10n;
const HALTS = 11n;
const REASON = "CitizenMetadata: metadata unavailable";

let node: AnvilNode;
let devnet: DevnetClient;
let deployment: DevnetDeployment;
let reader: Address;
let block: bigint;

beforeAll(async () => {
  node = await startAnvil();
  devnet = createDevnetClient(node.rpcUrl);
  deployment = await deployDevnet(devnet);
  const actions = stakingActions(devnet, deployment);
  const owner = deployment.deployer;
  await actions.mine([
    ...[...HEALTHY, REVERTS_WITH_REASON, HALTS].map((id) => actions.mintS1(owner, id)),
    actions.setMetadataFault(1, REVERTS_WITH_REASON, 2),
    actions.setMetadataFault(1, HALTS, 5),
  ]);
  const hash = await devnet.deployContract({
    abi: staticCallBatchAbi,
    bytecode: staticCallBatchBytecode,
    account: owner,
  });
  const receipt = await devnet.waitForTransactionReceipt({ hash });
  reader = receipt.contractAddress!;
  block = receipt.blockNumber;
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

const tokenUri = (citizenId: bigint) => ({
  target: deployment.addresses.s1Citizen,
  data: encodeFunctionData({ abi: s1CitizenAbi, functionName: "tokenURI", args: [citizenId] }),
});

/** What tokenURI returns, ABI-encoded, as a call outside the batch reads it. */
async function returnedAlone(citizenId: bigint): Promise<Hex> {
  const uri = await devnet.readContract({
    address: deployment.addresses.s1Citizen,
    abi: s1CitizenAbi,
    functionName: "tokenURI",
    args: [citizenId],
    blockNumber: block,
  });
  return encodeFunctionResult({ abi: s1CitizenAbi, functionName: "tokenURI", result: uri });
}

async function run(
  calls: { target: Address; data: Hex }[],
  options: { gasPerCall: bigint; maxAnswerBytes: bigint; gas: bigint },
) {
  const { data } = await devnet.call({
    to: reader,
    data: encodeFunctionData({
      abi: staticCallBatchAbi,
      functionName: "run",
      args: [calls, options.gasPerCall, options.maxAnswerBytes],
    }),
    blockNumber: block,
    gas: options.gas,
  });
  return decodeFunctionResult({ abi: staticCallBatchAbi, functionName: "run", data: data! });
}

describe("StaticCallBatch", () => {
  test("each call's success and return data, revert data as the contract gave it", async () => {
    const results = await run(
      [tokenUri(1n), tokenUri(REVERTS_WITH_REASON), tokenUri(HALTS), tokenUri(2n)],
      { gasPerCall: 1_000_000n, maxAnswerBytes: 65_536n, gas: 30_000_000n },
    );
    expect(results).toEqual([
      { success: true, returnData: await returnedAlone(1n) },
      {
        success: false,
        returnData: encodeErrorResult({
          abi: [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }],
          errorName: "Error",
          args: [REASON],
        }),
      },
      // An exceptional halt returns nothing, having burnt its cap.
      { success: false, returnData: "0x" },
      { success: true, returnData: await returnedAlone(2n) },
    ]);
  });

  test("halts burn their cap and no more: every call after them still runs", async () => {
    const calls = [tokenUri(HALTS), tokenUri(HALTS), tokenUri(HALTS), ...HEALTHY.map(tokenUri)];
    // 3 halts at a 1M cap fit 5M; uncapped, the first would take 63/64 of everything.
    const results = await run(calls, {
      gasPerCall: 1_000_000n,
      maxAnswerBytes: 65_536n,
      gas: 5_000_000n,
    });
    expect(results.map((result) => result.success)).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
      true,
    ]);
  });

  test("it stops before a call it could not give the whole cap, answering the calls before", async () => {
    const calls = [tokenUri(HALTS), tokenUri(HALTS), tokenUri(HALTS), ...HEALTHY.map(tokenUri)];
    const results = await run(calls, {
      gasPerCall: 1_000_000n,
      maxAnswerBytes: 65_536n,
      gas: 2_500_000n,
    });
    // After two halts (2M) the third could not get its 1M: the caller asks again for the rest.
    expect(results.map((result) => result.success)).toEqual([false, false]);
    const none = await run(calls, {
      gasPerCall: 1_000_000n,
      maxAnswerBytes: 65_536n,
      gas: 900_000n,
    });
    expect(none).toEqual([]);
  });

  test("the answer stops before the result that would pass the byte budget; one too large alone is left out", async () => {
    const size = (await returnedAlone(1n)).length / 2 - 1;
    const calls = HEALTHY.map(tokenUri);
    const options = { gasPerCall: 1_000_000n, gas: 30_000_000n };
    const two = await run(calls, { ...options, maxAnswerBytes: BigInt(2 * size + size / 2) });
    expect(two).toEqual([
      { success: true, returnData: await returnedAlone(1n) },
      { success: true, returnData: await returnedAlone(2n) },
    ]);
    const tooLarge = await run(calls, { ...options, maxAnswerBytes: BigInt(size - 1) });
    expect(tooLarge).toEqual([{ success: false, returnData: "0x" }]);
  });
});
