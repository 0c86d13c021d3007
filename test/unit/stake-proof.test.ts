/**
 * When the chain at a later block of a chunk proves what a stake applied at its own block, and
 * why not otherwise (its own block is then read).
 */
import { describe, expect, test } from "bun:test";
import type { CitizenRow, StakerEventRow } from "../../db/schema.ts";
import type { StakeReads } from "../../indexer/chain/stake-reads.ts";
import type { StakeContext } from "../../indexer/project/stake-context.ts";
import { proveStake } from "../../indexer/project/stake-proof.ts";

const DAY = 86_400n;
/** 30 days at 1.25x. */
const OPTION = ((30n * DAY) << 128n) | 125n;

/** Citizen #7's stake at block 3 by a wallet, in `season`. */
const stake = (season: 1 | 2): StakerEventRow => ({
  blockNumber: 3n,
  logIndex: 1,
  blockHash: `0x${"b".repeat(64)}`,
  transactionHash: `0x${"c".repeat(64)}`,
  account: "0x000000000000000000000000000000000000000a",
  event: "Stake",
  assetType: season === 1 ? "s1_citizen" : "s2_citizen",
  citizenSeason: season,
  citizenId: 7n,
  timelockOption: OPTION,
  amountOrTokenId: 7n,
});

describe("when a later block proves a stake's own", () => {
  const STAKED_AT = 1_000n;
  const END = STAKED_AT + 30n * DAY;
  const citizen = (fields: Partial<CitizenRow> = {}): CitizenRow => ({
    season: 1,
    citizenId: 7n,
    identityId: 7n,
    itemCacheId: 1n,
    landDeedId: 1n,
    componentVaultId: 0n,
    isHand: false,
    ...fields,
  });
  const context = (fields: Partial<StakeContext> = {}): StakeContext => ({
    heldThrough: 20n,
    laterDeposits: [],
    laterBonusInBlock: 0n,
    occurrenceInTransaction: 0,
    ...fields,
  });
  /** Mid identity (200), no vault: 200 * 100 * 125 / 10000 = 250. */
  const s1Reads = (fields: Partial<StakeReads> = {}): StakeReads => ({
    timelockEndTime: END,
    points: 250n,
    stakedVaultId: 0n,
    hasVault: false,
    creditYield: "Mid",
    identityPoints: 200n,
    handMultiplier: 300n,
    ...fields,
  });
  const prove = (input: {
    season?: 1 | 2;
    citizen?: CitizenRow;
    context?: StakeContext;
    reads?: StakeReads | undefined;
    readBlock?: bigint | undefined;
  }) =>
    proveStake({
      event: stake(input.season ?? 1),
      citizen: input.citizen ?? citizen(),
      context: input.context ?? context(),
      blockTime: STAKED_AT,
      readAt:
        "readBlock" in input && input.readBlock === undefined
          ? undefined
          : {
              blockNumber: input.readBlock ?? 20n,
              reads: "reads" in input ? input.reads : s1Reads(),
            },
    });
  const because = (input: Parameters<typeof prove>[0]) => {
    const proof = prove(input);
    return proof.proven ? "proven" : proof.because;
  };
  const deposits = context({
    laterDeposits: [
      { blockNumber: 5n, bonus: 40n },
      { blockNumber: 21n, bonus: 9n },
    ],
  });

  test("an S2 stake holding its end time and 100 x its multiplier", () => {
    expect(because({ season: 2, reads: { timelockEndTime: END, points: 125n } })).toBe("proven");
    expect(because({ season: 2, reads: { timelockEndTime: END, points: 126n } })).toBe(
      "points differ",
    );
    expect(
      prove({ season: 2, context: deposits, reads: { timelockEndTime: END, points: 165n } }),
    ).toMatchObject({ proven: true, laterBonus: 40n });
  });

  test("an S1 stake the configuration read there scores", () => {
    expect(prove({})).toEqual({ proven: true, reads: s1Reads(), laterBonus: 0n });
    expect(because({ reads: s1Reads({ identityPoints: 300n }) })).toBe("points differ");
    expect(because({ context: deposits, reads: s1Reads({ points: 290n }) })).toBe("proven");
    expect(because({ context: deposits, reads: s1Reads({ points: 250n }) })).toBe("points differ");
  });

  test("the vault an S1 stake counts: component, else staked, else 100", () => {
    const vaulted = s1Reads({ points: 500n, configuredVaultMultiplier: 200n });
    expect(because({ citizen: citizen({ componentVaultId: 9n }), reads: vaulted })).toBe("proven");
    expect(because({ reads: { ...vaulted, stakedVaultId: 9n, hasVault: true } })).toBe("proven");
    expect(because({ reads: vaulted })).toBe("points differ");
  });

  test("only a Hand may have applied the '?' multiplier", () => {
    const claimed = s1Reads({ points: 750n });
    expect(because({ citizen: citizen({ isHand: true }), reads: claimed })).toBe("proven");
    expect(because({ citizen: citizen({ isHand: true }), reads: s1Reads() })).toBe("proven");
    expect(because({ reads: claimed })).toBe("points differ");
  });

  test("zero points fit any multiplier: they prove nothing", () => {
    expect(because({ reads: s1Reads({ points: 0n, identityPoints: 0n, creditYield: "" }) })).toBe(
      "zero points",
    );
  });

  test("an entry the stake did not write, or no entry, proves nothing", () => {
    expect(because({ reads: s1Reads({ timelockEndTime: END + 1n }) })).toBe("timelock end differs");
    expect(because({ reads: undefined })).toBe("no reading");
    expect(because({ readBlock: undefined })).toBe("moved in its own block");
    expect(because({ context: context({ heldThrough: 19n }) })).toBe("not held at the read block");
    expect(because({ readBlock: 2n })).toBe("not held at the read block");
  });
});
