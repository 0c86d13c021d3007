import { describe, expect, test } from "bun:test";
import { parseTokenMetadata } from "../../indexer/project/metadata.ts";
import { AmbiguousHandClaim, appliedVaultMultiplier } from "../../indexer/project/stake-facts.ts";
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
