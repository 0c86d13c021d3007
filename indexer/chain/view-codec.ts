import {
  type Abi,
  type Address,
  decodeFunctionResult,
  encodeFunctionData,
  getAbiItem,
  type Hex,
} from "viem";
import { PREPARED_TYPES, type PreparedCall, prepareCall } from "./prepared-call.ts";

/** One view call, its ABI and arguments. */
export interface ViewCall {
  address: Address;
  abi: Abi;
  functionName: string;
  args: readonly unknown[];
}

/** The calldata of a call, prepared where its arguments are words or strings (prepared-call.ts). */
export function calldataOf(call: ViewCall): Hex {
  return codecOf(call).calldata(call.args);
}

/**
 * A call's value from its own answer, or undefined where only the single read can say what the
 * answer means (test/unit/view-codec.test.ts).
 */
export function decodeView(call: ViewCall, returnData: Hex): unknown {
  return codecOf(call).decode(call, returnData);
}

interface Codec {
  calldata(args: readonly unknown[]): Hex;
  /** The value, or undefined when only the single read can say what the answer means. */
  decode(call: ViewCall, returnData: Hex): unknown;
}

const codecs = new WeakMap<Abi, Map<string, Codec>>();

function codecOf(call: ViewCall): Codec {
  let byName = codecs.get(call.abi);
  if (!byName) {
    byName = new Map();
    codecs.set(call.abi, byName);
  }
  let codec = byName.get(call.functionName);
  if (!codec) {
    codec = makeCodec(call.abi, call.functionName);
    byName.set(call.functionName, codec);
  }
  return codec;
}

function makeCodec(abi: Abi, functionName: string): Codec {
  const item = getAbiItem({ abi, name: functionName });
  const outputs = item?.type === "function" ? item.outputs : [];
  const preparable =
    item?.type === "function" && item.inputs.every((input) => PREPARED_TYPES.has(input.type));
  const prepared: PreparedCall | undefined = preparable
    ? prepareCall(abi, functionName as never)
    : undefined;
  const calldata = prepared
    ? (args: readonly unknown[]) => prepared(args as readonly (bigint | Address | string)[])
    : (args: readonly unknown[]) => encodeFunctionData({ abi, functionName, args } as never);
  const fast = fastDecoder(outputs.map((output) => output.type));
  if (fast) return { calldata, decode: (_, returnData) => fast(returnData) };
  return {
    calldata,
    decode: (call, returnData) => {
      try {
        return decodeFunctionResult({ ...call, data: returnData } as never);
      } catch {
        return undefined;
      }
    },
  };
}

const ZERO_WORD = "0".repeat(64);
const ONE_WORD = `${"0".repeat(63)}1`;
const STRING_AT = `${"0".repeat(62)}20`;
const utf8 = new TextDecoder();

/**
 * A decoder that slices the answer's hex for the output shapes the bulk reads have (words:
 * uint256 and bool; one string), giving what viem's decodeFunctionResult gives (an array for
 * several outputs, the value for one). Only an answer of exactly that layout is read here;
 * anything else (a short or long answer, a bool that is not 0 or 1, a string placed elsewhere)
 * is undefined, for the single read to judge as before.
 */
function fastDecoder(types: readonly string[]): ((returnData: Hex) => unknown) | undefined {
  if (types.length > 0 && types.every((type) => type === "uint256" || type === "bool")) {
    const length = 2 + 64 * types.length;
    return (returnData) => {
      if (returnData.length !== length) return undefined;
      const values: unknown[] = [];
      for (let i = 0; i < types.length; i++) {
        const word = returnData.slice(2 + 64 * i, 66 + 64 * i);
        if (types[i] === "uint256") values.push(BigInt(`0x${word}`));
        else if (word === ZERO_WORD || word === ONE_WORD) values.push(word === ONE_WORD);
        else return undefined;
      }
      return values.length === 1 ? values[0] : values;
    };
  }
  if (types.length === 1 && types[0] === "string") {
    return (returnData) => {
      if (returnData.length < 130 || returnData.slice(2, 66) !== STRING_AT) return undefined;
      const length = Number.parseInt(returnData.slice(66, 130), 16);
      if (!Number.isSafeInteger(length)) return undefined;
      if (returnData.length !== 130 + Math.ceil(length / 32) * 64) return undefined;
      return utf8.decode(Buffer.from(returnData.slice(130, 130 + 2 * length), "hex"));
    };
  }
  return undefined;
}
