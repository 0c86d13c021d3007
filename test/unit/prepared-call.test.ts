/** Prepared calldata (indexer/chain/prepared-call.ts) is viem's encodeFunctionData, byte for byte. */
import { describe, expect, test } from "bun:test";
import { encodeFunctionData, getAddress, maxUint256, parseAbi } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { prepareCall } from "../../indexer/chain/prepared-call.ts";
import { identityAbi, s1CitizenAbi } from "../../indexer/chain/token-abis.ts";

const staker = getAddress("0xabcdef0123456789abcdef0123456789abcdef01");

describe("prepareCall", () => {
  test("uint256 and address arguments encode as viem encodes them", () => {
    for (const id of [0n, 1n, 1234n, maxUint256]) {
      expect(prepareCall(s1CitizenAbi, "getVaultIdOfTokenId")([id])).toBe(
        encodeFunctionData({ abi: s1CitizenAbi, functionName: "getVaultIdOfTokenId", args: [id] }),
      );
      expect(prepareCall(identityAbi, "getClass")([id])).toBe(
        encodeFunctionData({ abi: identityAbi, functionName: "getClass", args: [id] }),
      );
      expect(prepareCall(stakerAbi, "stakedS1")([staker, id])).toBe(
        encodeFunctionData({ abi: stakerAbi, functionName: "stakedS1", args: [staker, id] }),
      );
    }
  });

  test("string arguments, alone and among words, encode as viem encodes them", () => {
    const mixed = parseAbi([
      "function f(uint256 a, string b, address c, string d) view returns (uint256)",
    ]);
    const texts = ["", "?", "Low", "x".repeat(32), "y".repeat(33), "héllo ✓ 𝄞", "a".repeat(100)];
    for (const text of texts) {
      for (const name of ["identityCreditPoints", "vaultCreditMultiplier"] as const) {
        expect(prepareCall(stakerAbi, name)([text])).toBe(
          encodeFunctionData({ abi: stakerAbi, functionName: name, args: [text] }),
        );
      }
      const args = [7n, text, staker, `${text}!`] as const;
      expect(prepareCall(mixed, "f")([...args])).toBe(
        encodeFunctionData({ abi: mixed, functionName: "f", args }),
      );
    }
  });

  test("a value out of its type's range, or the wrong count, is refused", () => {
    const call = prepareCall(s1CitizenAbi, "tokenURI");
    expect(() => call([-1n])).toThrow("not a uint256");
    expect(() => call([maxUint256 + 1n])).toThrow("not a uint256");
    expect(() => call([])).toThrow("takes 1 arguments");
    expect(() => prepareCall(stakerAbi, "stakedS1")([1n, 1n])).toThrow("not an address");
    expect(() => prepareCall(stakerAbi, "identityCreditPoints")([1n])).toThrow("not a string");
  });
});
