/**
 * What a chunk's other events say about each of its stakes (one pass per citizen), and where
 * the chunk reads its stakes so that as few blocks as possible answer for all of them.
 */
import { describe, expect, test } from "bun:test";
import type { StakerEventRow } from "../../db/schema.ts";
import { bonusThrough, readBlocks, stakeContexts } from "../../indexer/project/stake-context.ts";

const E18 = 10n ** 18n;
const A = "0x000000000000000000000000000000000000000a";
const B = "0x000000000000000000000000000000000000000b";
/** 30 days at 1.25x. */
const OPTION = ((30n * 86_400n) << 128n) | 125n;

const base = (block: number, logIndex: number, account: string) => ({
  blockNumber: BigInt(block),
  logIndex,
  blockHash: `0x${"b".repeat(62)}${block.toString(16).padStart(2, "0")}`,
  transactionHash: `0x${"c".repeat(62)}${block.toString(16).padStart(2, "0")}`,
  account,
});
const stake = (block: number, logIndex: number, season: 1 | 2, id: number, account = A) =>
  ({
    ...base(block, logIndex, account),
    event: "Stake",
    assetType: season === 1 ? "s1_citizen" : "s2_citizen",
    citizenSeason: season,
    citizenId: BigInt(id),
    timelockOption: OPTION,
    amountOrTokenId: BigInt(id),
  }) satisfies StakerEventRow;
const bytes = (
  block: number,
  logIndex: number,
  season: 1 | 2,
  id: number,
  bytes: bigint,
  account = A,
) =>
  ({
    ...base(block, logIndex, account),
    event: "Stake",
    assetType: "bytes",
    citizenSeason: season,
    citizenId: BigInt(id),
    timelockOption: (BigInt(season) << 128n) | BigInt(id),
    amountOrTokenId: bytes * E18,
  }) satisfies StakerEventRow;
const withdraw = (block: number, logIndex: number, season: 1 | 2, id: number, account = A) =>
  ({
    ...base(block, logIndex, account),
    event: "Withdraw",
    assetType: season === 1 ? "s1_citizen" : "s2_citizen",
    citizenSeason: season,
    citizenId: BigInt(id),
    amountOrTokenId: BigInt(id),
  }) satisfies StakerEventRow;
const claim = (block: number, logIndex: number) =>
  ({ ...base(block, logIndex, A), event: "Claim", reward: 0n, tax: 0n }) satisfies StakerEventRow;

/** The contexts of the citizen stakes among `events` in a chunk ending at block 20. */
const contextsOf = (events: StakerEventRow[]) => {
  const stakes = events.filter((e) => e.event === "Stake" && e.assetType !== "bytes");
  return { stakes, contexts: stakeContexts(stakes, events, 20n) };
};
const held = (events: StakerEventRow[]) => contextsOf(events).contexts.map((c) => c.heldThrough);

describe("what a chunk's later events say about each stake", () => {
  test("a stake nothing moves later is held through the chunk's last block", () => {
    expect(held([stake(3, 1, 1, 7), claim(4, 0), stake(5, 0, 2, 7)])).toEqual([20n, 20n]);
  });

  test("a withdraw or a new stake of the citizen ends the stake the block before", () => {
    expect(held([stake(3, 1, 1, 7), withdraw(9, 1, 1, 7), stake(9, 3, 1, 7, B)])).toEqual([
      8n,
      20n,
    ]);
    expect(held([stake(3, 1, 1, 7), withdraw(3, 4, 1, 7)])).toEqual([2n]);
    expect(held([stake(3, 1, 1, 7), withdraw(9, 1, 2, 7), withdraw(9, 2, 1, 8)])).toEqual([20n]);
  });

  test("events arrive in any order: the chunk's order decides", () => {
    expect(held([stake(12, 0, 1, 7), withdraw(9, 1, 1, 7), stake(3, 1, 1, 7)])).toEqual([20n, 8n]);
  });

  test("its staker's later deposits count, in its block and after, until the citizen moves", () => {
    const { contexts } = contextsOf([
      bytes(3, 0, 1, 7, 10n),
      stake(3, 1, 1, 7),
      bytes(3, 2, 1, 7, 5n),
      bytes(3, 3, 1, 7, 100n, B),
      bytes(6, 0, 2, 7, 40n),
      bytes(6, 1, 1, 7, 7n),
      withdraw(9, 0, 1, 7),
      bytes(10, 0, 1, 7, 20n),
    ]);
    expect(contexts[0]!.laterDeposits).toEqual([
      { blockNumber: 3n, bonus: 2n },
      { blockNumber: 6n, bonus: 3n },
    ]);
    expect(contexts[0]!.laterBonusInBlock).toBe(2n);
    expect([2n, 3n, 6n, 20n].map((n) => bonusThrough(contexts[0]!, n))).toEqual([0n, 2n, 5n, 5n]);
  });

  test("stakes of one citizen in one transaction are counted in order", () => {
    const inOneTransaction = [stake(3, 1, 1, 7), withdraw(3, 2, 1, 7), stake(3, 3, 1, 7)];
    const { contexts } = contextsOf([stake(2, 0, 1, 7), withdraw(2, 1, 1, 7), ...inOneTransaction]);
    expect(contexts.map((c) => c.occurrenceInTransaction)).toEqual([0, 0, 1]);
  });
});

describe("where a chunk reads its stakes", () => {
  const blocksOf = (events: StakerEventRow[]) => {
    const { stakes, contexts } = contextsOf(events);
    return readBlocks(stakes, contexts);
  };

  test("stakes nothing moves are all read at the chunk's last block", () => {
    expect(blocksOf([stake(3, 0, 1, 1), stake(4, 0, 2, 2), stake(20, 0, 1, 3)])).toEqual([
      20n,
      20n,
      20n,
    ]);
  });

  test("overlapping stakes share the earliest end among them", () => {
    const events = [stake(3, 0, 1, 1), stake(5, 0, 1, 2), withdraw(8, 0, 1, 1), stake(10, 0, 1, 3)];
    expect(blocksOf(events)).toEqual([7n, 7n, 20n]);
  });

  test("a stake moved in its own block has no later block to read", () => {
    expect(blocksOf([stake(3, 0, 1, 1), withdraw(3, 1, 1, 1), stake(4, 0, 1, 2)])).toEqual([
      undefined,
      20n,
    ]);
  });
});
