/**
 * The one entry point for reads at a block (indexer/chain/block-reads.ts): a reader makes each
 * distinct call once for as long as it lives, sends the calls asked at one block in one turn
 * together, and a reader set to read alone gives each call an eth_call of its own. The oracle
 * for every value is viem's own readContract against the same node and block.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PublicClient } from "viem";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient } from "../../devnet/client.ts";
import { type DevnetDeployment, deployDevnet } from "../../devnet/deploy.ts";
import { createBlockReads } from "../../indexer/chain/block-reads.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import { s1CitizenAbi } from "../../indexer/chain/token-abis.ts";
import { stakingActions } from "../support/staking.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

const CITIZENS = [11n, 12n, 13n];

let node: AnvilNode;
let deployment: DevnetDeployment;
let oracle: PublicClient;
let block: bigint;

beforeAll(async () => {
  node = await startAnvil();
  const devnet = createDevnetClient(node.rpcUrl);
  deployment = await deployDevnet(devnet);
  const actions = stakingActions(devnet, deployment);
  await actions.mine(CITIZENS.map((id) => actions.mintS1(deployment.deployer, id)));
  block = await devnet.getBlockNumber({ cacheTime: 0 });
  oracle = createChainClient(node.rpcUrl, { retryCount: 0 });
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

/** A chain client whose eth_calls are counted, as the indexer's metrics count them. */
function countingClient() {
  const calls = { eth_call: 0 };
  const client = createChainClient(node.rpcUrl, {
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

type Getter = "getIdentityIdOfTokenId" | "getRewardRateOfTokenId";
const call = (functionName: Getter, citizenId: bigint) => ({
  address: deployment.addresses.s1Citizen,
  abi: s1CitizenAbi,
  functionName,
  args: [citizenId] as const,
  blockNumber: block,
});
const expected = (functionName: Getter, citizenId: bigint) =>
  oracle.readContract(call(functionName, citizenId));

describe("a reader at a block", () => {
  test("calls asked in one turn go in one eth_call, and a call asked again is not made again", async () => {
    const { client, calls } = countingClient();
    const reader = createBlockReads(client);
    const values = await Promise.all([
      ...CITIZENS.map((id) => reader.read(call("getIdentityIdOfTokenId", id))),
      reader.read(call("getIdentityIdOfTokenId", CITIZENS[0]!)),
      reader.read(call("getRewardRateOfTokenId", CITIZENS[0]!)),
    ]);
    expect(values).toEqual(
      await Promise.all([
        ...CITIZENS.map((id) => expected("getIdentityIdOfTokenId", id)),
        expected("getIdentityIdOfTokenId", CITIZENS[0]!),
        expected("getRewardRateOfTokenId", CITIZENS[0]!),
      ]),
    );
    expect(calls.eth_call).toBe(1);

    // A later turn: the calls already made answer from the memo, a new one goes to the node.
    await reader.read(call("getRewardRateOfTokenId", CITIZENS[0]!));
    expect(calls.eth_call).toBe(1);
    expect(await reader.read(call("getRewardRateOfTokenId", CITIZENS[1]!))).toBe(
      await expected("getRewardRateOfTokenId", CITIZENS[1]!),
    );
    expect(calls.eth_call).toBe(2);

    // The memo is the reader's: a new reader (the next fetch, a retry) asks the node again.
    await createBlockReads(client).read(call("getRewardRateOfTokenId", CITIZENS[0]!));
    expect(calls.eth_call).toBe(3);
  });

  test("a reader set to read alone makes one eth_call per distinct call", async () => {
    const { client, calls } = countingClient();
    const reader = createBlockReads(client, { batching: "alone" });
    const values = await Promise.all([
      ...CITIZENS.map((id) => reader.read(call("getIdentityIdOfTokenId", id))),
      reader.read(call("getIdentityIdOfTokenId", CITIZENS[0]!)),
    ]);
    expect(values).toEqual(
      await Promise.all([
        ...CITIZENS.map((id) => expected("getIdentityIdOfTokenId", id)),
        expected("getIdentityIdOfTokenId", CITIZENS[0]!),
      ]),
    );
    expect(calls.eth_call).toBe(CITIZENS.length);
  });
});
