import { describe, expect, test } from "bun:test";
import type { CitizenRow, StakerEventRow } from "../../db/schema.ts";
import type { StakeReads } from "../../indexer/chain/stake-reads.ts";
import { parseTokenMetadata } from "../../indexer/project/metadata.ts";
import {
  AmbiguousHandClaim,
  appliedVaultMultiplier,
  buildCitizenStake,
  figuresExplain,
} from "../../indexer/project/stake-facts.ts";
import { bytesBonus } from "../../lib/vocabulary.ts";

const E18 = 10n ** 18n;

describe("BYTES bonus", () => {
  test("each deposit adds floor(amount / 2 BYTES) points", () => {
    expect(bytesBonus(2000n * E18)).toBe(1000n);
    expect(bytesBonus(2n * E18 - 1n)).toBe(0n);
    expect(bytesBonus(3n * E18)).toBe(1n);
  });
});

describe("the vault multiplier an S1 stake applied", () => {
  const hand = {
    isHand: true,
    identityPoints: 300n,
    timelockMultiplier: 150n,
    handMultiplier: 300n,
  };

  test("a Hand's claim is recognised from the points it produced", () => {
    const applied = appliedVaultMultiplier({ ...hand, basePoints: 1350n, vaultMultiplier: 100n });
    expect(applied).toEqual({ multiplier: 300n, handClaim: true, source: "points" });
  });

  test("a Hand staked without the claim keeps its vault's multiplier", () => {
    const applied = appliedVaultMultiplier({ ...hand, basePoints: 675n, vaultMultiplier: 150n });
    expect(applied).toEqual({ multiplier: 150n, handClaim: false, source: "points" });
  });

  test("points that fit both readings defer to the flag read from the call", () => {
    const zero = { ...hand, identityPoints: 0n, basePoints: 0n, vaultMultiplier: 100n };
    expect(() => appliedVaultMultiplier(zero)).toThrow(AmbiguousHandClaim);
    const claim = { claim: true, source: "trace" } as const;
    expect(appliedVaultMultiplier({ ...zero, handFlag: claim })).toEqual({
      multiplier: 300n,
      handClaim: true,
      source: "trace",
    });
    const assumed = { claim: false, source: "inferred" } as const;
    expect(appliedVaultMultiplier({ ...zero, handFlag: assumed })).toEqual({
      multiplier: 100n,
      handClaim: false,
      source: "inferred",
    });
  });

  test("a citizen that is not a Hand never takes the Hand multiplier", () => {
    const applied = appliedVaultMultiplier({
      ...hand,
      isHand: false,
      basePoints: 1350n,
      vaultMultiplier: 200n,
    });
    expect(applied).toEqual({ multiplier: 200n, handClaim: false, source: null });
  });
});

describe("token metadata", () => {
  test("a base64 data URI gives its name and an http image", () => {
    const json = JSON.stringify({ name: "Citizen #7", image: "https://img.example/7.png" });
    const uri = `data:application/json;base64,${Buffer.from(json).toString("base64")}`;
    expect(parseTokenMetadata(uri)).toEqual({
      name: "Citizen #7",
      image: "https://img.example/7.png",
    });
  });

  test("an inline SVG image or unreadable JSON is left out", () => {
    const json = JSON.stringify({ name: "Citizen #8", image: "data:image/svg+xml;base64,AAAA" });
    expect(parseTokenMetadata(`data:application/json,${encodeURIComponent(json)}`)).toEqual({
      name: "Citizen #8",
    });
  });

  test("metadata that cannot be read says why", () => {
    expect(parseTokenMetadata("data:application/json;base64,!!!")).toEqual({
      unreadable: "tokenURI's JSON does not parse",
    });
    expect(parseTokenMetadata("ipfs://whatever")).toEqual({
      unreadable: "tokenURI is not inline JSON: ipfs://whatever",
    });
    expect(parseTokenMetadata("")).toEqual({ unreadable: "tokenURI is empty" });
  });
});

describe("the configuration figures an S1 stake is served with", () => {
  /** 180 days at 1.50x. */
  const option = ((180n * 86_400n) << 128n) | 150n;
  const event: StakerEventRow = {
    blockNumber: 10n,
    logIndex: 3,
    blockHash: `0x${"ab".repeat(32)}`,
    transactionHash: `0x${"cd".repeat(32)}`,
    event: "Stake",
    account: `0x${"01".repeat(20)}`,
    asset: `0x${"02".repeat(20)}`,
    assetType: "s1_citizen",
    timelockOption: option,
    amountOrTokenId: 7n,
    citizenSeason: 1,
    citizenId: 7n,
  };
  const citizen: CitizenRow = {
    season: 1,
    citizenId: 7n,
    identityId: 7n,
    itemCacheId: 1n,
    landDeedId: 1n,
    componentVaultId: 0n,
    isHand: false,
  };
  /** The stake applied 100 identity points with no vault: 150 points, plus a later bonus. */
  const reads = (identityPoints: bigint): StakeReads => ({
    timelockEndTime: 1_000n,
    points: 150n + 4n,
    stakedVaultId: 0n,
    hasVault: false,
    creditYield: "Low",
    identityPoints,
    handMultiplier: 300n,
  });
  const built = (identityPoints: bigint, configuration?: "parent" | "trace") =>
    buildCitizenStake({
      event,
      citizen,
      reads: reads(identityPoints),
      laterBonus: 4n,
      configuration,
    });

  test("figures that give the stake's points keep the source they were read from", () => {
    expect(built(100n).configurationSource).toBe("block");
    expect(built(100n, "parent").configurationSource).toBe("parent");
    expect(built(100n, "trace")).toMatchObject({
      configurationSource: "trace",
      identityPoints: 100n,
      basePoints: 150n,
    });
  });

  test("figures that do not are inferred, whatever they were read from", () => {
    const timelockMultiplier = 150n;
    expect(
      figuresExplain({ citizen, reads: reads(1_100n), timelockMultiplier, basePoints: 150n }),
    ).toBe(false);
    expect(built(1_100n, "parent")).toMatchObject({
      configurationSource: "inferred",
      identityPoints: 1_100n,
      basePoints: 150n,
    });
  });

  test("a Hand's figures explain its points with the claim or without it", () => {
    const hand = { ...citizen, isHand: true };
    const timelockMultiplier = 150n;
    // 100 x "?" 300 x 1.5 = 450; 100 x no vault (100) x 1.5 = 150.
    for (const basePoints of [450n, 150n]) {
      expect(
        figuresExplain({ citizen: hand, reads: reads(100n), timelockMultiplier, basePoints }),
      ).toBe(true);
    }
    expect(
      figuresExplain({ citizen, reads: reads(100n), timelockMultiplier, basePoints: 450n }),
    ).toBe(false);
  });

  test("an S2 stake has no configuration to read", () => {
    const s2 = { ...event, assetType: "s2_citizen" as const, citizenSeason: 2 };
    const row = buildCitizenStake({
      event: s2,
      citizen: { ...citizen, season: 2 },
      reads: { timelockEndTime: 1_000n, points: 150n },
      laterBonus: 0n,
    });
    expect(row.configurationSource).toBeUndefined();
  });
});
