/**
 * The Hand flag read from a call trace: Hand citizens staked with and without the claim, straight
 * from an account, through a forwarder contract, through two nested forwarders, two at once, and
 * after failed attempts in the same transaction. The answer must equal what was sent, and the
 * staker's own points must agree with it. Then the same through a node without debug_ (the module
 * falls back to trace_transaction) and a node with neither (TraceUnavailable).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type Address,
  encodeFunctionData,
  type Hash,
  type Hex,
  keccak256,
  type PublicClient,
  parseEther,
  slice,
  stringToHex,
} from "viem";
import {
  forwarderAbi,
  forwarderBytecode,
  identityAbi,
  neoTokyoStakerAbi,
  s1CitizenAbi,
} from "../../contracts/generated/index.ts";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { DEVNET_DEPLOYER, type DevnetAddresses, deployDevnet } from "../../devnet/deploy.ts";
import { citizenRewardRate, HAND_CLASS, STAKER_ASSET_ID } from "../../devnet/settings.ts";
import { stakeCalldata } from "../../devnet/staking-calls.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import {
  readHandClaim,
  StakeNotInTrace,
  TraceUnavailable,
} from "../../indexer/chain/hand-trace.ts";
import { type RpcErrorAnswer, startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

class TransactionReverted extends Error {
  override name = "TransactionReverted";
}

/**
 * A Hand (reward rate 15, no vault) yields High: 300 identity points. On the 30-day option (1.00x)
 * a claim scores with vaultCreditMultiplier("?") = 300, no claim with the no-vault 100
 * (docs/staker.md §2, §6).
 */
const POINTS_WITH_CLAIM = 900n;
const POINTS_WITHOUT_CLAIM = 300n;
const THIRTY_DAYS = 0;
const NO_SUCH_OPTION = 99;

const NOT_AVAILABLE = (method: string): RpcErrorAnswer => ({
  code: -32601,
  message: `the method ${method} does not exist/is not available`,
});

let node: AnvilNode;
let devnet: DevnetClient;
let contracts: DevnetAddresses;
/** An account, a forwarder it drives, and a second forwarder that only the first one drives. */
let wallet: Address;
let forwarder: Address;
let innerForwarder: Address;

type ExpectedStake = {
  label: string;
  transactionHash: Hash;
  holder: Address;
  citizenId: bigint;
  occurrence: number;
  handClaim: boolean;
};
const stakes: ExpectedStake[] = [];

type Call = { target: Address; data: Hex };

const stakeS1 = (citizenId: bigint, handClaimant: bigint, optionId = THIRTY_DAYS): Call => ({
  target: contracts.staker,
  data: stakeCalldata(STAKER_ASSET_ID.s1_citizen, optionId, citizenId, 0n, handClaimant),
});
const execute = (through: Address, calls: Call[]): Call => ({
  target: through,
  data: encodeFunctionData({ abi: forwarderAbi, functionName: "execute", args: [calls] }),
});
const tryExecute = (through: Address, calls: Call[]): Call => ({
  target: through,
  data: encodeFunctionData({ abi: forwarderAbi, functionName: "tryExecute", args: [calls] }),
});

/** The wallet sends one call; the transaction itself must succeed. */
async function send({ target, data }: Call): Promise<Hash> {
  const hash = await devnet.sendTransaction({
    account: wallet,
    to: target,
    data,
    chain: null,
    // anvil's estimate can fall short for stakes (docs/staker.md §7).
    gas: 5_000_000n,
  });
  const receipt = await devnet.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new TransactionReverted(`${hash} reverted`);
  return hash;
}

let lastId = 500n;
/** A Hand of Citadel citizen, minted straight to its holder. */
async function mintHand(holder: Address): Promise<bigint> {
  const identityId = ++lastId;
  const citizenId = ++lastId;
  for (const hash of [
    await devnet.writeContract({
      address: contracts.identity,
      abi: identityAbi,
      functionName: "setClasses",
      args: [[identityId], [HAND_CLASS]],
      account: DEVNET_DEPLOYER,
      chain: null,
    }),
    await devnet.writeContract({
      address: contracts.s1Citizen,
      abi: s1CitizenAbi,
      functionName: "mint",
      args: [holder, citizenId, identityId, 0n, 1n, 1n, citizenRewardRate("Hand", "")],
      account: DEVNET_DEPLOYER,
      chain: null,
    }),
  ]) {
    await devnet.waitForTransactionReceipt({ hash });
  }
  return citizenId;
}

async function deployForwarder(): Promise<Address> {
  const hash = await devnet.deployContract({
    abi: forwarderAbi,
    bytecode: forwarderBytecode,
    account: DEVNET_DEPLOYER,
    chain: null,
  });
  const { contractAddress } = await devnet.waitForTransactionReceipt({ hash });
  if (!contractAddress) throw new TransactionReverted("the forwarder was not created");
  return contractAddress;
}

const approveStaker = (): Call => ({
  target: contracts.s1Citizen,
  data: encodeFunctionData({
    abi: s1CitizenAbi,
    functionName: "setApprovalForAll",
    args: [contracts.staker, true],
  }),
});

beforeAll(async () => {
  node = await startAnvil();
  devnet = createDevnetClient(node.rpcUrl);
  contracts = (await deployDevnet(devnet)).addresses;
  wallet = slice(keccak256(stringToHex("hand-trace wallet")), 12);
  await devnet.setBalance({ address: wallet, value: parseEther("100") });
  forwarder = await deployForwarder();
  innerForwarder = await deployForwarder();
  // The staker pulls each citizen from msg.sender, so whoever calls stake must approve it.
  await send(approveStaker());
  await send(execute(forwarder, [approveStaker()]));
  await send(execute(forwarder, [execute(innerForwarder, [approveStaker()])]));

  const record = (
    label: string,
    transactionHash: Hash,
    holder: Address,
    citizenId: bigint,
    handClaim: boolean,
  ) => stakes.push({ label, transactionHash, holder, citizenId, occurrence: 0, handClaim });

  for (const [handClaimant, handClaim] of [
    [1n, true],
    [2n, false],
  ] as const) {
    const id = await mintHand(wallet);
    record(
      `direct, handClaimant ${handClaimant}`,
      await send(stakeS1(id, handClaimant)),
      wallet,
      id,
      handClaim,
    );
  }
  for (const [handClaimant, handClaim] of [
    [1n, true],
    [255n, false],
  ] as const) {
    const id = await mintHand(forwarder);
    const hash = await send(execute(forwarder, [stakeS1(id, handClaimant)]));
    record(`through a forwarder, handClaimant ${handClaimant}`, hash, forwarder, id, handClaim);
  }
  for (const [handClaimant, handClaim] of [
    [1n, true],
    [0n, false],
  ] as const) {
    const id = await mintHand(innerForwarder);
    const hash = await send(
      execute(forwarder, [execute(innerForwarder, [stakeS1(id, handClaimant)])]),
    );
    record(
      `through nested forwarders, handClaimant ${handClaimant}`,
      hash,
      innerForwarder,
      id,
      handClaim,
    );
  }
  {
    const claimed = await mintHand(forwarder);
    const unclaimed = await mintHand(forwarder);
    const hash = await send(execute(forwarder, [stakeS1(claimed, 1n), stakeS1(unclaimed, 0n)]));
    record("two stakes in one transaction, the first claimed", hash, forwarder, claimed, true);
    record(
      "two stakes in one transaction, the second unclaimed",
      hash,
      forwarder,
      unclaimed,
      false,
    );
  }
  for (const [failedClaimant, claimant, handClaim] of [
    [1n, 0n, false],
    [0n, 1n, true],
  ] as const) {
    const id = await mintHand(forwarder);
    // The first attempt names an option the staker does not have and reverts inside tryExecute.
    const hash = await send(
      tryExecute(forwarder, [stakeS1(id, failedClaimant, NO_SUCH_OPTION), stakeS1(id, claimant)]),
    );
    record(
      `a failed attempt with handClaimant ${failedClaimant}, then a stake with ${claimant}`,
      hash,
      forwarder,
      id,
      handClaim,
    );
  }
  {
    // The inner stake succeeds, but the inner forwarder's batch then fails (the citizen is
    // already in escrow), so the whole batch is undone; the retry without the claim stands.
    const id = await mintHand(innerForwarder);
    const hash = await send(
      tryExecute(forwarder, [
        execute(innerForwarder, [stakeS1(id, 1n), stakeS1(id, 1n)]),
        execute(innerForwarder, [stakeS1(id, 0n)]),
      ]),
    );
    record(
      "a claimed stake inside a batch that failed, then one without",
      hash,
      innerForwarder,
      id,
      false,
    );
  }
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

test("every scenario staked what it meant to: the staker's points follow the claim sent", async () => {
  for (const stake of stakes) {
    const [, , points] = await devnet.readContract({
      address: contracts.staker,
      abi: neoTokyoStakerAbi,
      functionName: "stakedS1",
      args: [stake.holder, stake.citizenId],
    });
    expect({ label: stake.label, points }).toEqual({
      label: stake.label,
      points: stake.handClaim ? POINTS_WITH_CLAIM : POINTS_WITHOUT_CLAIM,
    });
  }
});

async function answersOf(client: PublicClient) {
  const answers: { label: string; handClaim: boolean }[] = [];
  for (const stake of stakes) {
    answers.push({
      label: stake.label,
      handClaim: await readHandClaim(client, { ...stake, staker: contracts.staker }),
    });
  }
  return answers;
}
const sent = () => stakes.map(({ label, handClaim }) => ({ label, handClaim }));

describe("the Hand flag equals what was sent", () => {
  test("from debug_traceTransaction's call tree", async () => {
    // trace_transaction refused, so only the call tracer can answer.
    const proxy = startRpcFaultProxy({
      upstream: node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      refuseMethods: { trace_transaction: NOT_AVAILABLE("trace_transaction") },
    });
    try {
      const client = createChainClient(proxy.url, { retryCount: 0 });
      expect(await answersOf(client)).toEqual(sent());
      expect(proxy.counts.refusedMethods).toBe(0);
    } finally {
      proxy.stop();
    }
  });

  test("from trace_transaction when the node has no debug_traceTransaction, asking debug_ once", async () => {
    const proxy = startRpcFaultProxy({
      upstream: node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      refuseMethods: { debug_traceTransaction: NOT_AVAILABLE("debug_traceTransaction") },
    });
    try {
      const client = createChainClient(proxy.url, { retryCount: 0 });
      expect(await answersOf(client)).toEqual(sent());
      expect(proxy.counts.refusedMethods).toBe(1);
    } finally {
      proxy.stop();
    }
  });

  test("straight from anvil", async () => {
    expect(await answersOf(createChainClient(node.rpcUrl, { retryCount: 0 }))).toEqual(sent());
  });
});

describe("when the trace cannot answer", () => {
  test("a node with neither trace API gives TraceUnavailable, and is not asked again at once", async () => {
    const proxy = startRpcFaultProxy({
      upstream: node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
      refuseMethods: {
        debug_traceTransaction: NOT_AVAILABLE("debug_traceTransaction"),
        trace_transaction: NOT_AVAILABLE("trace_transaction"),
      },
    });
    try {
      const client = createChainClient(proxy.url, { retryCount: 0 });
      const [first, second] = stakes as [ExpectedStake, ExpectedStake];
      for (const stake of [first, second]) {
        const answer = readHandClaim(client, { ...stake, staker: contracts.staker });
        await expect(answer).rejects.toBeInstanceOf(TraceUnavailable);
      }
      expect(proxy.counts.refusedMethods).toBe(2);
    } finally {
      proxy.stop();
    }
  });

  test("a stake the transaction does not hold is StakeNotInTrace", async () => {
    const client = createChainClient(node.rpcUrl, { retryCount: 0 });
    const [stake] = stakes as [ExpectedStake];
    const other = stakes.find((entry) => entry.transactionHash !== stake.transactionHash);
    for (const asked of [
      { ...stake, occurrence: 1 },
      { ...stake, citizenId: other?.citizenId ?? 0n },
    ]) {
      const answer = readHandClaim(client, { ...asked, staker: contracts.staker });
      await expect(answer).rejects.toBeInstanceOf(StakeNotInTrace);
    }
  });
});
