import { describe, expect, test } from "bun:test";
import { splitRange } from "../../indexer/jobs/queues.ts";
import { parseTokenMetadata } from "../../indexer/project/metadata.ts";
import {
  AmbiguousHandClaim,
  appliedVaultMultiplier,
  bytesBonus,
} from "../../indexer/project/stake-facts.ts";

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
    expect(applied).toEqual({ multiplier: 300n, handClaim: true });
  });

  test("a Hand staked without the claim keeps its vault's multiplier", () => {
    const applied = appliedVaultMultiplier({ ...hand, basePoints: 675n, vaultMultiplier: 150n });
    expect(applied).toEqual({ multiplier: 150n, handClaim: false });
  });

  test("points that fit both readings defer to the calldata", () => {
    const zero = { ...hand, identityPoints: 0n, basePoints: 0n, vaultMultiplier: 100n };
    expect(() => appliedVaultMultiplier(zero)).toThrow(AmbiguousHandClaim);
    expect(appliedVaultMultiplier({ ...zero, handClaimFromCalldata: true }).multiplier).toBe(300n);
    expect(appliedVaultMultiplier({ ...zero, handClaimFromCalldata: false }).multiplier).toBe(100n);
  });

  test("a citizen that is not a Hand never takes the Hand multiplier", () => {
    const applied = appliedVaultMultiplier({
      ...hand,
      isHand: false,
      basePoints: 1350n,
      vaultMultiplier: 200n,
    });
    expect(applied).toEqual({ multiplier: 200n, handClaim: false });
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
    expect(parseTokenMetadata("data:application/json;base64,!!!")).toEqual({});
    expect(parseTokenMetadata("ipfs://whatever")).toEqual({});
  });
});

describe("chunking", () => {
  test("a range splits into contiguous chunks that end at its last block", () => {
    expect(splitRange(10n, 24n, 5)).toEqual([
      { from: 10n, to: 14n },
      { from: 15n, to: 19n },
      { from: 20n, to: 24n },
    ]);
    expect(splitRange(10n, 11n, 5)).toEqual([{ from: 10n, to: 11n }]);
  });
});
