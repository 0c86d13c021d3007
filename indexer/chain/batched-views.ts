import {
  type Abi,
  type Address,
  decodeFunctionResult,
  encodeFunctionData,
  getAbiItem,
  type Hex,
  type PublicClient,
} from "viem";
import type { BlockAt } from "./block-pin.ts";
import { type PreparedCall, prepareCall } from "./prepared-call.ts";
import { readStaticCalls } from "./static-call-batch.ts";
import { readView } from "./view-read.ts";

/** One view call to read in bulk. */
export interface BatchedView {
  address: Address;
  abi: Abi;
  functionName: string;
  args: readonly unknown[];
}

/**
 * Calls to an eth_call: about as many as one of viem's multicalls took (3,000 bytes of calldata,
 * ~80 calls), so the count of eth_calls stays where it was. 100 calls of up to 68 bytes are
 * ~50 kB of JSON, and 32 of them in one HTTP request stay under anvil's 2 MiB body cap.
 */
const CALLS_PER_BATCH = 100;

/**
 * Each call's value at `at`, many calls to an eth_call through the static-call reader
 * (static-call-batch.ts), by block hash like every read. The calldata comes from prepared
 * selectors and each answer is decoded once, from its own bytes. A call the batch has no clean
 * answer for (it failed, its answer does not decode, the node would not run the batch) is read
 * again alone through readView, the path these reads took before: a view that reverts throws the
 * same ReadReverted, and any other failure is classified as it was. One promise per call, so a
 * caller can tell each call's failure from the others'.
 */
export function readBatchedViews(
  client: PublicClient,
  calls: readonly BatchedView[],
  at: BlockAt,
): Promise<unknown>[] {
  if (calls.length === 0) return [];
  const codecs = calls.map(codecOf);
  const answers = readStaticCalls(
    client,
    calls.map((call, i) => ({ to: call.address, data: codecs[i]!.calldata(call.args) })),
    at,
    CALLS_PER_BATCH,
  );
  return calls.map(async (call, i) => {
    const answer = (await answers)[i];
    const value = answer === undefined ? undefined : codecs[i]!.decode(call, answer);
    if (value !== undefined) return value;
    return readView(client, { ...call, ...at } as never);
  });
}

/** The calldata of a call, prepared where its arguments are words (prepared-call.ts). */
export function calldataOf(call: BatchedView): Hex {
  return codecOf(call).calldata(call.args);
}

interface Codec {
  calldata(args: readonly unknown[]): Hex;
  /** The value, or undefined when only the single read can say what the answer means. */
  decode(call: BatchedView, returnData: Hex): unknown;
}

const codecs = new WeakMap<Abi, Map<string, Codec>>();

function codecOf(call: BatchedView): Codec {
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
  const wordArgs =
    item?.type === "function" &&
    item.inputs.every((input) => input.type === "uint256" || input.type === "address");
  const prepared: PreparedCall | undefined = wordArgs
    ? prepareCall(abi, functionName as never)
    : undefined;
  const calldata = prepared
    ? (args: readonly unknown[]) => prepared(args as readonly (bigint | Address)[])
    : (args: readonly unknown[]) => encodeFunctionData({ abi, functionName, args } as never);
  // One uint256 is one word; any other length is left to the single read to judge.
  if (outputs.length === 1 && outputs[0]!.type === "uint256") {
    return {
      calldata,
      decode: (_, returnData) => (returnData.length === 66 ? BigInt(returnData) : undefined),
    };
  }
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
