/**
 * The reader's calldata and answer by hand (indexer/chain/static-call-codec.ts) against viem's own
 * ABI coder: the same calldata for any calls, the same results for any answer the reader can give,
 * and an answer that is not the reader's layout decoded (or refused) by viem, as before.
 */
import { describe, expect, test } from "bun:test";
import {
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  type Hex,
  toHex,
} from "viem";
import { staticCallBatchAbi as abi } from "../../contracts/generated/StaticCallBatch.ts";
import { decodeRun, encodeRun } from "../../indexer/chain/static-call-codec.ts";

/** Deterministic bytes of a given length (a small LCG: the test must fail the same way twice). */
function bytesOf(length: number, seed: number): Hex {
  let x = seed;
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    x = (x * 1_103_515_245 + 12_345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return toHex(bytes);
}

const address = (i: number) => `0x${(0xabc000 + i).toString(16).padStart(40, "0")}` as Hex;
const LENGTHS = [0, 1, 4, 31, 32, 33, 36, 68, 100, 1_000];
const resultsType = abi[0].outputs;

describe("encodeRun", () => {
  test("gives viem's calldata for calls of every length, none and many", () => {
    const cases = [
      [],
      LENGTHS.map((length, i) => ({ to: address(i), data: bytesOf(length, i) })),
      Array.from({ length: 150 }, (_, i) => ({ to: address(i), data: bytesOf(36, i) })),
    ];
    for (const calls of cases) {
      const expected = encodeFunctionData({
        abi,
        functionName: "run",
        args: [calls.map((call) => ({ target: call.to, data: call.data })), 10_000_000n, 65_536n],
      });
      expect(encodeRun(calls, 10_000_000n, 65_536)).toBe(expected);
    }
  });

  test("a checksummed address is sent lowercase, as viem sends it", () => {
    const to = getAddress("0xabcdef0123456789abcdef0123456789abcdef01");
    expect(to).not.toBe(to.toLowerCase());
    const expected = encodeFunctionData({
      abi,
      functionName: "run",
      args: [[{ target: to, data: "0x1234" }], 1n, 2n],
    });
    expect(encodeRun([{ to, data: "0x1234" }], 1n, 2)).toBe(expected);
  });

  test("a call that is not hex is refused", () => {
    expect(() => encodeRun([{ to: address(1), data: "0x123" }], 1n, 2)).toThrow();
    expect(() => encodeRun([{ to: "0x12", data: "0x" }], 1n, 2)).toThrow();
  });
});

describe("decodeRun", () => {
  test("gives viem's results for answers of every length, success or not", () => {
    const results = LENGTHS.map((length, i) => ({
      success: i % 3 !== 1,
      returnData: bytesOf(length, 100 + i),
    }));
    for (const answer of [[], results, results.slice(0, 1)]) {
      const data = encodeAbiParameters(resultsType, [answer]);
      expect(decodeRun(data)).toEqual(decodeFunctionResult({ abi, functionName: "run", data }));
      expect(decodeRun(data.toUpperCase().replace("0X", "0x") as Hex)).toEqual(
        decodeFunctionResult({ abi, functionName: "run", data }),
      );
    }
  });

  test("an answer that is not the reader's layout fails as viem fails it", () => {
    const data = encodeAbiParameters(resultsType, [[{ success: true, returnData: "0x1234" }]]);
    for (const broken of ["0x", data.slice(0, -64), `${data.slice(0, 66)}ff`] as Hex[]) {
      expect(() => decodeRun(broken)).toThrow();
      expect(() => decodeFunctionResult({ abi, functionName: "run", data: broken })).toThrow();
    }
  });
});
