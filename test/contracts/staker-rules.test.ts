/**
 * The devnet staker against docs/staker.md §1, §2 and §6: act on chain, then read the staker's own
 * views (stakedS1, stakedS2, getStakerPosition(s), getCreditYield) and its logs. The expected
 * numbers are the document's, written out here rather than recomputed from devnet/settings.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  type Hash,
  isAddressEqual,
  keccak256,
  maxUint256,
  parseEther,
  parseEventLogs,
  slice,
  stringToHex,
  type TransactionReceipt,
  toEventSelector,
} from "viem";
import {
  bytesTokenAbi,
  identityAbi,
  neoTokyoStakerAbi,
  s1CitizenAbi,
  s2CitizenAbi,
  vaultAbi,
} from "../../contracts/generated/index.ts";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { DEVNET_DEPLOYER, type DevnetAddresses, deployDevnet } from "../../devnet/deploy.ts";
import {
  citizenRewardRate,
  HAND_CLASS,
  type IdentityKind,
  STAKER_ASSET_ID,
  type StakerAssetId,
  type VaultTier,
} from "../../devnet/settings.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

const E18 = 10n ** 18n;
const DAY = 86_400n;

/** Option ids as devnet/settings.ts configures them (docs/staker.md §6 fixture order). */
const S1_30_DAYS = 0n;
const S1_90_DAYS = 1n;
const S1_180_DAYS = 2n;
const S2_30_DAYS = 0n;
const S2_90_DAYS = 1n;
const BYTES_OPTION = 0n;

const SEASON_1 = 1n;
const SEASON_2 = 2n;

/** docs/staker.md §1. */
const TOPIC0 = {
  Stake: "0x63602d0ecc7b3a0ef7ff1a116e23056662d64280355ba8031b6d0d767c4b4458",
  Withdraw: "0x9b1bfa7fa9ee420a16e124f794c35ac9f90472acc99140eb2f6447c714cad8eb",
  Claim: "0x34fcbac0073d7c3d388e51312faf357774904998eeb8fca628b9e6f65ee1cbf7",
} as const;

/** anvil's estimate for stake/withdraw can fall short once rewards accrue (docs/staker.md §7). */
const STAKER_GAS = 2_000_000n;

class TransactionReverted extends Error {
  override name = "TransactionReverted";
}

class CallDidNotRevert extends Error {
  override name = "CallDidNotRevert";
}

let node: AnvilNode;
let client: DevnetClient;
let contracts: DevnetAddresses;
/** Every stake and withdraw sent in this file, for the log-order check at the end. */
const stakerTransactions: { kind: "Stake" | "Withdraw"; receipt: TransactionReceipt }[] = [];

beforeAll(async () => {
  node = await startAnvil();
  client = createDevnetClient(node.rpcUrl);
  contracts = (await deployDevnet(client)).addresses;
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

let lastId = 1_000n;
/** Citizen, vault and identity ids never repeat in this file, so tests cannot collide. */
const freshId = () => ++lastId;

async function confirmed(hash: Promise<Hash>): Promise<TransactionReceipt> {
  const receipt = await client.waitForTransactionReceipt({ hash: await hash });
  if (receipt.status !== "success") {
    throw new TransactionReverted(`transaction ${receipt.transactionHash} reverted`);
  }
  return receipt;
}

/** The custom error a call reverts with, decoded against the staker's ABI. */
async function revertOf(
  call: Promise<unknown>,
): Promise<{ errorName: string; args: readonly unknown[] }> {
  try {
    await call;
  } catch (error) {
    const reverted =
      error instanceof BaseError
        ? error.walk((cause) => cause instanceof ContractFunctionRevertedError)
        : null;
    if (reverted instanceof ContractFunctionRevertedError && reverted.data) {
      return { errorName: reverted.data.errorName, args: reverted.data.args ?? [] };
    }
    throw error;
  }
  throw new CallDidNotRevert("expected the call to revert, but it succeeded");
}

/** A funded account that has approved the staker for citizens, vaults and BYTES. */
async function newStaker(label: string): Promise<Address> {
  const staker = slice(keccak256(stringToHex(`staker-rules ${label}`)), 12);
  await client.setBalance({ address: staker, value: parseEther("100") });
  for (const [address, abi] of [
    [contracts.s1Citizen, s1CitizenAbi],
    [contracts.s2Citizen, s2CitizenAbi],
    [contracts.vault, vaultAbi],
  ] as const) {
    await confirmed(
      client.writeContract({
        address,
        abi,
        functionName: "setApprovalForAll",
        args: [contracts.staker, true],
        account: staker,
      }),
    );
  }
  await confirmed(
    client.writeContract({
      address: contracts.bytes,
      abi: bytesTokenAbi,
      functionName: "approve",
      args: [contracts.staker, maxUint256],
      account: staker,
    }),
  );
  return staker;
}

async function mintVault(owner: Address, tier: VaultTier): Promise<bigint> {
  const vaultId = freshId();
  await confirmed(
    client.writeContract({
      address: contracts.vault,
      abi: vaultAbi,
      functionName: "mint",
      args: [owner, vaultId, tier],
      account: DEVNET_DEPLOYER,
    }),
  );
  return vaultId;
}

type S1CitizenSpec = {
  identity: IdentityKind;
  componentVault?: VaultTier;
  /** Overrides the rate devnet/settings.ts derives from identity and component vault. */
  rewardRate?: bigint;
};

async function mintS1Citizen(
  owner: Address,
  spec: S1CitizenSpec,
): Promise<{ citizenId: bigint; componentVaultId: bigint }> {
  const identityId = freshId();
  await confirmed(
    client.writeContract({
      address: contracts.identity,
      abi: identityAbi,
      functionName: "setClasses",
      args: [[identityId], [spec.identity === "Hand" ? HAND_CLASS : "Samurai"]],
      account: DEVNET_DEPLOYER,
    }),
  );
  // A component vault belongs to the citizen contract, as if absorbed into the citizen.
  const componentVaultId =
    spec.componentVault === undefined
      ? 0n
      : await mintVault(contracts.s1Citizen, spec.componentVault);
  const citizenId = freshId();
  await confirmed(
    client.writeContract({
      address: contracts.s1Citizen,
      abi: s1CitizenAbi,
      functionName: "mint",
      args: [
        owner,
        citizenId,
        identityId,
        componentVaultId,
        freshId(),
        freshId(),
        spec.rewardRate ?? citizenRewardRate(spec.identity, spec.componentVault ?? ""),
      ],
      account: DEVNET_DEPLOYER,
    }),
  );
  return { citizenId, componentVaultId };
}

async function mintS2Citizen(owner: Address): Promise<bigint> {
  const citizenId = freshId();
  await confirmed(
    client.writeContract({
      address: contracts.s2Citizen,
      abi: s2CitizenAbi,
      functionName: "mint",
      args: [owner, citizenId, freshId(), freshId(), freshId()],
      account: DEVNET_DEPLOYER,
    }),
  );
  return citizenId;
}

async function mintBytes(owner: Address, amount: bigint): Promise<void> {
  await confirmed(
    client.writeContract({
      address: contracts.bytes,
      abi: bytesTokenAbi,
      functionName: "mint",
      args: [owner, amount],
      account: DEVNET_DEPLOYER,
    }),
  );
}

/** stake(type, timelockId, word3, word4, word5); the last three words depend on the type. */
type StakeWords = readonly [StakerAssetId, bigint, bigint, bigint, bigint];

const s1Stake = (
  citizenId: bigint,
  timelockId: bigint,
  vaultId = 0n,
  handClaimant = 0n,
): StakeWords => [STAKER_ASSET_ID.s1_citizen, timelockId, citizenId, vaultId, handClaimant];
const s2Stake = (citizenId: bigint, timelockId: bigint): StakeWords => [
  STAKER_ASSET_ID.s2_citizen,
  timelockId,
  citizenId,
  0n,
  0n,
];
const bytesStake = (amount: bigint, citizenId: bigint, season: bigint): StakeWords => [
  STAKER_ASSET_ID.bytes,
  BYTES_OPTION,
  amount,
  citizenId,
  season,
];

function stakeRequest(staker: Address, words: StakeWords) {
  return {
    address: contracts.staker,
    abi: neoTokyoStakerAbi,
    functionName: "stake",
    args: words,
    account: staker,
    gas: STAKER_GAS,
  } as const;
}

async function stake(staker: Address, words: StakeWords): Promise<TransactionReceipt> {
  const receipt = await confirmed(client.writeContract(stakeRequest(staker, words)));
  stakerTransactions.push({ kind: "Stake", receipt });
  return receipt;
}

const stakeReverts = (staker: Address, words: StakeWords) =>
  revertOf(client.simulateContract(stakeRequest(staker, words)));

function withdrawRequest(staker: Address, assetType: StakerAssetId, citizenId: bigint) {
  return {
    address: contracts.staker,
    abi: neoTokyoStakerAbi,
    functionName: "withdraw",
    args: [assetType, citizenId],
    account: staker,
    gas: STAKER_GAS,
  } as const;
}

async function withdraw(
  staker: Address,
  assetType: StakerAssetId,
  citizenId: bigint,
): Promise<TransactionReceipt> {
  const receipt = await confirmed(
    client.writeContract(withdrawRequest(staker, assetType, citizenId)),
  );
  stakerTransactions.push({ kind: "Withdraw", receipt });
  return receipt;
}

async function stakedS1(staker: Address, citizenId: bigint) {
  const [stakedBytes, timelockEndTime, points, stakedVaultId, hasVault] = await client.readContract(
    {
      address: contracts.staker,
      abi: neoTokyoStakerAbi,
      functionName: "stakedS1",
      args: [staker, citizenId],
    },
  );
  return { stakedBytes, timelockEndTime, points, stakedVaultId, hasVault };
}

async function stakedS2(staker: Address, citizenId: bigint) {
  const [stakedBytes, timelockEndTime, points] = await client.readContract({
    address: contracts.staker,
    abi: neoTokyoStakerAbi,
    functionName: "stakedS2",
    args: [staker, citizenId],
  });
  return { stakedBytes, timelockEndTime, points };
}

const creditYieldOf = (citizenId: bigint, componentVaultId: bigint) =>
  client.readContract({
    address: contracts.staker,
    abi: neoTokyoStakerAbi,
    functionName: "getCreditYield",
    args: [citizenId, componentVaultId],
  });

const bytesBalance = (owner: Address) =>
  client.readContract({
    address: contracts.bytes,
    abi: bytesTokenAbi,
    functionName: "balanceOf",
    args: [owner],
  });

/** The staker's own logs in a receipt, decoded, in log order. */
const stakerEvents = (receipt: TransactionReceipt) =>
  parseEventLogs({
    abi: neoTokyoStakerAbi,
    logs: receipt.logs.filter((log) => isAddressEqual(log.address, contracts.staker)),
  });

function stakeEventOf(receipt: TransactionReceipt) {
  const event = stakerEvents(receipt).find((log) => log.eventName === "Stake");
  if (event?.eventName !== "Stake") throw new Error("the transaction logged no Stake");
  return event;
}

describe("worked examples (docs/staker.md §2)", () => {
  const examples: {
    name: string;
    citizen: S1CitizenSpec;
    creditYield: string;
    stakedVault?: VaultTier;
    handClaim?: boolean;
    timelockId: bigint;
    points: bigint;
  }[] = [
    {
      name: "a Low identity with a component High vault for 30 days",
      citizen: { identity: "Low", componentVault: "High" },
      creditYield: "Low",
      timelockId: S1_30_DAYS,
      points: 200n,
    },
    {
      name: "a Mid identity with a separately staked Very High vault for 90 days",
      citizen: { identity: "Mid" },
      creditYield: "Mid",
      stakedVault: "Very High",
      timelockId: S1_90_DAYS,
      points: 625n,
    },
    {
      // The Low vault is staked alongside so the citizen may hold 2000 BYTES; the claim replaces
      // its multiplier (100) with the "?" one (300).
      name: "a Hand claiming with a High identity for 180 days",
      citizen: { identity: "Hand" },
      creditYield: "High",
      stakedVault: "Low",
      handClaim: true,
      timelockId: S1_180_DAYS,
      points: 1350n,
    },
  ];

  for (const example of examples) {
    test(`${example.name} earns ${example.points} points, and 1000 more with 2000 BYTES`, async () => {
      const staker = await newStaker(example.name);
      const { citizenId, componentVaultId } = await mintS1Citizen(staker, example.citizen);
      const stakedVaultId =
        example.stakedVault === undefined ? 0n : await mintVault(staker, example.stakedVault);
      expect(await creditYieldOf(citizenId, componentVaultId)).toBe(example.creditYield);

      await stake(
        staker,
        s1Stake(citizenId, example.timelockId, stakedVaultId, example.handClaim ? 1n : 0n),
      );
      const afterStake = await stakedS1(staker, citizenId);
      expect(afterStake.points).toBe(example.points);
      expect(afterStake.hasVault).toBe(true);
      expect(afterStake.stakedVaultId).toBe(stakedVaultId);
      expect(afterStake.stakedBytes).toBe(0n);

      await mintBytes(staker, 2_000n * E18);
      await stake(staker, bytesStake(2_000n * E18, citizenId, SEASON_1));
      const afterBytes = await stakedS1(staker, citizenId);
      expect(afterBytes.points).toBe(example.points + 1_000n);
      expect(afterBytes.stakedBytes).toBe(2_000n * E18);
    });
  }

  test("S2 citizens earn 100 points for 30 days and 125 for 90 days", async () => {
    const staker = await newStaker("s2 examples");
    const monthly = await mintS2Citizen(staker);
    const quarterly = await mintS2Citizen(staker);
    await stake(staker, s2Stake(monthly, S2_30_DAYS));
    await stake(staker, s2Stake(quarterly, S2_90_DAYS));
    expect((await stakedS2(staker, monthly)).points).toBe(100n);
    expect((await stakedS2(staker, quarterly)).points).toBe(125n);
  });
});

describe("S1 vault and Hand rules", () => {
  test("a component vault plus a vault id reverts CitizenAlreadyHasVault", async () => {
    const staker = await newStaker("already has vault");
    const { citizenId, componentVaultId } = await mintS1Citizen(staker, {
      identity: "Mid",
      componentVault: "Medium",
    });
    const secondVaultId = await mintVault(staker, "High");
    expect(await stakeReverts(staker, s1Stake(citizenId, S1_30_DAYS, secondVaultId))).toEqual({
      errorName: "CitizenAlreadyHasVault",
      args: [componentVaultId, secondVaultId],
    });
  });

  test("handClaimant 1 on a citizen that is not a Hand reverts CitizenIsNotHand", async () => {
    const staker = await newStaker("not a hand");
    const { citizenId } = await mintS1Citizen(staker, { identity: "High" });
    expect(await stakeReverts(staker, s1Stake(citizenId, S1_30_DAYS, 0n, 1n))).toEqual({
      errorName: "CitizenIsNotHand",
      args: [citizenId],
    });
  });

  test("handClaimant 2 stakes a Hand as an ordinary citizen, without the ? multiplier", async () => {
    const staker = await newStaker("hand claimant 2");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Hand" });
    await stake(staker, s1Stake(citizenId, S1_30_DAYS, 0n, 2n));
    // High identity (300) × no vault (100) × 30 days (100); a claim would have made it 900.
    const staked = await stakedS1(staker, citizenId);
    expect(staked.points).toBe(300n);
    expect(staked.hasVault).toBe(false);
  });

  test("a reward rate missing from the credit-yield table stakes with yield '' and 0 points", async () => {
    const staker = await newStaker("unmapped rate");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Low", rewardRate: 4n });
    expect(await creditYieldOf(citizenId, 0n)).toBe("");
    await stake(staker, s1Stake(citizenId, S1_90_DAYS));
    const staked = await stakedS1(staker, citizenId);
    expect(staked.points).toBe(0n);
    expect(staked.timelockEndTime).toBeGreaterThan(0n);
  });
});

describe("BYTES stakes", () => {
  test("a vaulted S1 citizen takes exactly 2000 BYTES; one wei more reverts AmountExceedsCap", async () => {
    const staker = await newStaker("vault cap");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Low", componentVault: "Low" });
    await stake(staker, s1Stake(citizenId, S1_30_DAYS));
    await mintBytes(staker, 2_001n * E18);

    expect(await stakeReverts(staker, bytesStake(2_000n * E18 + 1n, citizenId, SEASON_1))).toEqual({
      errorName: "AmountExceedsCap",
      args: [2_000n * E18 + 1n, 2_000n * E18],
    });
    await stake(staker, bytesStake(2_000n * E18, citizenId, SEASON_1));
    expect(await stakeReverts(staker, bytesStake(1n, citizenId, SEASON_1))).toEqual({
      errorName: "AmountExceedsCap",
      args: [2_000n * E18 + 1n, 2_000n * E18],
    });
    expect((await stakedS1(staker, citizenId)).stakedBytes).toBe(2_000n * E18);
  });

  test("an S1 citizen without a vault takes exactly 200 BYTES", async () => {
    const staker = await newStaker("no vault cap");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Mid" });
    await stake(staker, s1Stake(citizenId, S1_30_DAYS));
    await mintBytes(staker, 201n * E18);

    await stake(staker, bytesStake(200n * E18, citizenId, SEASON_1));
    expect(await stakeReverts(staker, bytesStake(1n, citizenId, SEASON_1))).toEqual({
      errorName: "AmountExceedsCap",
      args: [200n * E18 + 1n, 200n * E18],
    });
  });

  test("a Hand claim without a vault keeps the 200 BYTES cap", async () => {
    const staker = await newStaker("hand without vault cap");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Hand" });
    await stake(staker, s1Stake(citizenId, S1_30_DAYS, 0n, 1n));
    // High (300) × "?" (300) × 30 days (100).
    expect((await stakedS1(staker, citizenId)).points).toBe(900n);
    await mintBytes(staker, 2_000n * E18);
    expect(await stakeReverts(staker, bytesStake(2_000n * E18, citizenId, SEASON_1))).toEqual({
      errorName: "AmountExceedsCap",
      args: [2_000n * E18, 200n * E18],
    });
  });

  test("an S2 citizen takes exactly 200 BYTES", async () => {
    const staker = await newStaker("s2 cap");
    const citizenId = await mintS2Citizen(staker);
    await stake(staker, s2Stake(citizenId, S2_30_DAYS));
    await mintBytes(staker, 201n * E18);

    await stake(staker, bytesStake(200n * E18, citizenId, SEASON_2));
    expect(await stakeReverts(staker, bytesStake(1n, citizenId, SEASON_2))).toEqual({
      errorName: "AmountExceedsCap",
      args: [200n * E18 + 1n, 200n * E18],
    });
    const staked = await stakedS2(staker, citizenId);
    expect(staked.stakedBytes).toBe(200n * E18);
    expect(staked.points).toBe(100n + 100n);
  });

  test("the bonus is floored per deposit: two deposits of 3 BYTES add 2 points, one of 6 adds 3", async () => {
    const staker = await newStaker("bonus truncation");
    const split = (await mintS1Citizen(staker, { identity: "Low" })).citizenId;
    const whole = (await mintS1Citizen(staker, { identity: "Low" })).citizenId;
    await stake(staker, s1Stake(split, S1_30_DAYS));
    await stake(staker, s1Stake(whole, S1_30_DAYS));
    await mintBytes(staker, 12n * E18);

    await stake(staker, bytesStake(3n * E18, split, SEASON_1));
    await stake(staker, bytesStake(3n * E18, split, SEASON_1));
    await stake(staker, bytesStake(6n * E18, whole, SEASON_1));

    const splitStaked = await stakedS1(staker, split);
    const wholeStaked = await stakedS1(staker, whole);
    expect(splitStaked.stakedBytes).toBe(6n * E18);
    expect(wholeStaked.stakedBytes).toBe(6n * E18);
    expect(splitStaked.points).toBe(100n + 2n);
    expect(wholeStaked.points).toBe(100n + 3n);
  });

  test("BYTES into a citizen someone else staked revert CannotStakeIntoUnownedCitizen", async () => {
    const owner = await newStaker("citizen owner");
    const outsider = await newStaker("bytes outsider");
    const { citizenId: s1CitizenId } = await mintS1Citizen(owner, { identity: "Mid" });
    const s2CitizenId = await mintS2Citizen(owner);
    await stake(owner, s1Stake(s1CitizenId, S1_30_DAYS));
    await stake(owner, s2Stake(s2CitizenId, S2_30_DAYS));
    await mintBytes(outsider, 200n * E18);

    expect(await stakeReverts(outsider, bytesStake(100n * E18, s1CitizenId, SEASON_1))).toEqual({
      errorName: "CannotStakeIntoUnownedCitizen",
      args: [s1CitizenId, SEASON_1],
    });
    expect(await stakeReverts(outsider, bytesStake(100n * E18, s2CitizenId, SEASON_2))).toEqual({
      errorName: "CannotStakeIntoUnownedCitizen",
      args: [s2CitizenId, SEASON_2],
    });
  });
});

describe("Stake events (docs/staker.md §1)", () => {
  test("the staker's event selectors are the documented topic0 values", () => {
    const selectors = Object.fromEntries(
      neoTokyoStakerAbi
        .filter((item) => item.type === "event")
        .map((item) => [item.name, toEventSelector(item)]),
    );
    expect(selectors).toMatchObject(TOPIC0);
  });

  test("an S1 stake logs Claim then Stake carrying duration << 128 | multiplier and the citizen id", async () => {
    const staker = await newStaker("s1 stake event");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Low" });
    const receipt = await stake(staker, s1Stake(citizenId, S1_90_DAYS));

    const stakerLogs = receipt.logs.filter((log) => isAddressEqual(log.address, contracts.staker));
    expect(stakerLogs.map((log) => log.topics[0])).toEqual([TOPIC0.Claim, TOPIC0.Stake]);

    const { args } = stakeEventOf(receipt);
    const ninetyDays = 90n * DAY;
    expect(isAddressEqual(args.staker, staker)).toBe(true);
    expect(isAddressEqual(args.asset, contracts.s1Citizen)).toBe(true);
    expect(args.timelockOption).toBe((ninetyDays << 128n) | 125n);
    expect(args.amountOrTokenId).toBe(citizenId);

    const block = await client.getBlock({ blockNumber: receipt.blockNumber });
    expect((await stakedS1(staker, citizenId)).timelockEndTime).toBe(block.timestamp + ninetyDays);
  });

  test("a BYTES stake logs season << 128 | citizen id and the amount", async () => {
    const staker = await newStaker("bytes stake event");
    const { citizenId: s1CitizenId } = await mintS1Citizen(staker, { identity: "Mid" });
    const s2CitizenId = await mintS2Citizen(staker);
    await stake(staker, s1Stake(s1CitizenId, S1_30_DAYS));
    await stake(staker, s2Stake(s2CitizenId, S2_30_DAYS));
    await mintBytes(staker, 100n * E18);

    const s1Event = stakeEventOf(
      await stake(staker, bytesStake(40n * E18 + 7n, s1CitizenId, SEASON_1)),
    );
    expect(isAddressEqual(s1Event.args.asset, contracts.bytes)).toBe(true);
    expect(s1Event.args.timelockOption).toBe((1n << 128n) + s1CitizenId);
    expect(s1Event.args.amountOrTokenId).toBe(40n * E18 + 7n);

    const s2Event = stakeEventOf(await stake(staker, bytesStake(20n * E18, s2CitizenId, SEASON_2)));
    expect(isAddressEqual(s2Event.args.asset, contracts.bytes)).toBe(true);
    expect(s2Event.args.timelockOption).toBe((2n << 128n) + s2CitizenId);
    expect(s2Event.args.amountOrTokenId).toBe(20n * E18);
  });
});

describe("withdrawing S1 citizens", () => {
  test("before the timelock ends, withdraw reverts TimelockNotCleared with the end time", async () => {
    const staker = await newStaker("early withdraw");
    const { citizenId } = await mintS1Citizen(staker, { identity: "Low" });
    await stake(staker, s1Stake(citizenId, S1_30_DAYS));
    const { timelockEndTime } = await stakedS1(staker, citizenId);
    expect(
      await revertOf(
        client.simulateContract(withdrawRequest(staker, STAKER_ASSET_ID.s1_citizen, citizenId)),
      ),
    ).toEqual({ errorName: "TimelockNotCleared", args: [timelockEndTime] });
  });

  describe("after the timelock, the first of three staked citizens is withdrawn", () => {
    const stakedBytes = 500n * E18;
    let staker: Address;
    let first: bigint;
    let second: bigint;
    let third: bigint;
    let thirdComponentVault: bigint;
    let stakedVaultId: bigint;
    let receipt: TransactionReceipt;
    let stakerBalanceBefore: bigint;
    let escrowBalanceBefore: bigint;

    beforeAll(async () => {
      staker = await newStaker("withdraw order");
      first = (await mintS1Citizen(staker, { identity: "Mid" })).citizenId;
      second = (await mintS1Citizen(staker, { identity: "Low" })).citizenId;
      const withVault = await mintS1Citizen(staker, { identity: "High", componentVault: "Medium" });
      third = withVault.citizenId;
      thirdComponentVault = withVault.componentVaultId;
      stakedVaultId = await mintVault(staker, "High");

      await stake(staker, s1Stake(first, S1_30_DAYS, stakedVaultId));
      await stake(staker, s1Stake(second, S1_30_DAYS));
      await stake(staker, s1Stake(third, S1_30_DAYS));
      await mintBytes(staker, stakedBytes);
      await stake(staker, bytesStake(stakedBytes, first, SEASON_1));

      await client.increaseTime({ seconds: Number(31n * DAY) });
      await client.mine({ blocks: 1 });
      stakerBalanceBefore = await bytesBalance(staker);
      escrowBalanceBefore = await bytesBalance(contracts.staker);
      receipt = await withdraw(staker, STAKER_ASSET_ID.s1_citizen, first);
    }, 20_000);

    test("every stakedS1 field of the withdrawn citizen is zero", async () => {
      expect(await stakedS1(staker, first)).toEqual({
        stakedBytes: 0n,
        timelockEndTime: 0n,
        points: 0n,
        stakedVaultId: 0n,
        hasVault: false,
      });
    });

    test("the citizen, its staked vault and its BYTES go back to the staker", async () => {
      const ownerOf = (address: Address, abi: typeof s1CitizenAbi | typeof vaultAbi, id: bigint) =>
        client.readContract({ address, abi, functionName: "ownerOf", args: [id] });
      expect(isAddressEqual(await ownerOf(contracts.s1Citizen, s1CitizenAbi, first), staker)).toBe(
        true,
      );
      expect(isAddressEqual(await ownerOf(contracts.vault, vaultAbi, stakedVaultId), staker)).toBe(
        true,
      );

      // The staker also receives its reward in the same transaction, which the Claim log reports.
      const claim = stakerEvents(receipt).find((log) => log.eventName === "Claim");
      if (claim?.eventName !== "Claim") throw new Error("the withdrawal logged no Claim");
      expect(await bytesBalance(staker)).toBe(
        stakerBalanceBefore + stakedBytes + claim.args.reward,
      );
      expect(await bytesBalance(contracts.staker)).toBe(escrowBalanceBefore - stakedBytes);
    });

    test("the Withdraw log carries the citizen id after a Claim", () => {
      const events = stakerEvents(receipt);
      expect(events.map((log) => log.eventName)).toEqual(["Claim", "Withdraw"]);
      const withdrawal = events[1];
      if (withdrawal?.eventName !== "Withdraw")
        throw new Error("the withdrawal logged no Withdraw");
      expect(withdrawal.topics[0]).toBe(TOPIC0.Withdraw);
      expect(isAddressEqual(withdrawal.args.asset, contracts.s1Citizen)).toBe(true);
      expect(withdrawal.args.amountOrTokenId).toBe(first);
    });

    test("the last position takes the withdrawn one's place (swap and pop)", async () => {
      const ids = await client.readContract({
        address: contracts.staker,
        abi: neoTokyoStakerAbi,
        functionName: "getStakerPosition",
        args: [staker, STAKER_ASSET_ID.s1_citizen],
      });
      expect(ids).toEqual([third, second]);
      const positions = await client.readContract({
        address: contracts.staker,
        abi: neoTokyoStakerAbi,
        functionName: "getStakerPositions",
        args: [staker],
      });
      expect(positions.stakedS1Citizens.map((citizen) => citizen.citizenId)).toEqual([
        third,
        second,
      ]);
    });

    test("a component vault stays inside its citizen when the citizen is withdrawn", async () => {
      await withdraw(staker, STAKER_ASSET_ID.s1_citizen, third);
      const vaultOwner = await client.readContract({
        address: contracts.vault,
        abi: vaultAbi,
        functionName: "ownerOf",
        args: [thirdComponentVault],
      });
      expect(isAddressEqual(vaultOwner, contracts.s1Citizen)).toBe(true);
      const ids = await client.readContract({
        address: contracts.staker,
        abi: neoTokyoStakerAbi,
        functionName: "getStakerPosition",
        args: [staker, STAKER_ASSET_ID.s1_citizen],
      });
      expect(ids).toEqual([second]);
    });
  });
});

test("every stake and withdraw in this file logged Claim before its Stake or Withdraw", () => {
  expect(stakerTransactions.length).toBeGreaterThan(20);
  for (const { kind, receipt } of stakerTransactions) {
    expect(stakerEvents(receipt).map((log) => log.eventName)).toEqual(["Claim", kind]);
  }
});
