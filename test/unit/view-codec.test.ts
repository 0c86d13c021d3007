/**
 * The bulk reads' answers decoded by slicing (indexer/chain/view-codec.ts) give what viem's
 * decodeFunctionResult gives, and an answer of any other layout is left to the single read.
 */
import { describe, expect, test } from "bun:test";
import {
  type Address,
  decodeFunctionResult,
  encodeAbiParameters,
  getAbiItem,
  type Hex,
  maxUint256,
} from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { identityAbi, s1CitizenAbi, vaultAbi } from "../../indexer/chain/token-abis.ts";
import { decodeView, type ViewCall } from "../../indexer/chain/view-codec.ts";

const to: Address = "0x00000000000000000000000000000000000c4a11";
const view = (abi: ViewCall["abi"], functionName: string, args: readonly unknown[]): ViewCall => ({
  address: to,
  abi,
  functionName,
  args,
});
const answer = (call: ViewCall, values: readonly unknown[]) => {
  const item = getAbiItem({ abi: call.abi, name: call.functionName }) as unknown as {
    outputs: never;
  };
  return encodeAbiParameters(item.outputs, values as never);
};
const viemOf = (call: ViewCall, data: Hex) =>
  decodeFunctionResult({ ...call, data } as never) as unknown;

const stakedS1 = view(stakerAbi, "stakedS1", [to, 1n]);
const getClass = view(identityAbi, "getClass", [1n]);
const creditYield = view(stakerAbi, "getCreditYield", [1n, 0n]);
const multiplier = view(vaultAbi, "getCreditMultiplier", [1n]);
const rate = view(s1CitizenAbi, "getRewardRateOfTokenId", [1n]);

describe("decodeView", () => {
  test("words and strings decode as viem decodes them", () => {
    const cases: [ViewCall, unknown[]][] = [
      [stakedS1, [0n, 1n, maxUint256, 12345n, true]],
      [stakedS1, [7n, 0n, 0n, 0n, false]],
      [rate, [maxUint256]],
      [rate, [0n]],
      ...["", "Warrior", "x".repeat(32), "y".repeat(33), "Ünïcødé ☃ 🌸", "a\u0000b"].flatMap(
        (text): [ViewCall, unknown[]][] => [
          [getClass, [text]],
          [creditYield, [text]],
          [multiplier, [text]],
        ],
      ),
    ];
    for (const [call, values] of cases) {
      const data = answer(call, values);
      expect(decodeView(call, data)).toEqual(viemOf(call, data));
    }
  });

  test("an answer of another layout is left to the single read", () => {
    const words = answer(stakedS1, [1n, 2n, 3n, 4n, true]);
    const text = answer(getClass, ["Warrior"]);
    for (const [call, data] of [
      [stakedS1, "0x"],
      [stakedS1, words.slice(0, -64)],
      [stakedS1, `${words}${"0".repeat(64)}`],
      [stakedS1, `${words.slice(0, -1)}2`],
      [rate, "0x01"],
      [getClass, "0x"],
      [getClass, text.slice(0, -64)],
      [getClass, `0x${"0".repeat(62)}40${text.slice(66)}`],
    ] as [ViewCall, Hex][]) {
      expect(decodeView(call, data)).toBeUndefined();
    }
  });
});
