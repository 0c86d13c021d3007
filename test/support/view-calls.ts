/**
 * The contract calls one eth_call carries: itself when it names a contract, or each call of a
 * deployless multicall (viem's Multicall3 code run through the deploy-less constructor, with
 * aggregate3 calldata beside it), or each call of a static-call batch. One eth_call may carry dozens of reads, so counting eth_calls
 * alone says little about the node's work.
 */
import {
  type Abi,
  decodeAbiParameters,
  decodeFunctionData,
  deploylessCallViaBytecodeBytecode,
  type Hex,
  multicall3Abi,
  toFunctionSelector,
} from "viem";
import { staticCallBatchAbi } from "../../contracts/generated/StaticCallBatch.ts";

export type ViewCall = { target: string; callData: string };

const DEPLOYLESS_PREFIX = deploylessCallViaBytecodeBytecode.toLowerCase();

export function viewCallsOf(request: { to?: string; data?: string }): ViewCall[] {
  const data = (request.data ?? "0x").toLowerCase();
  if (request.to && data.startsWith(RUN_SELECTOR)) return staticBatchCalls(data as Hex);
  if (request.to) return [{ target: request.to.toLowerCase(), callData: data }];
  if (!data.startsWith(DEPLOYLESS_PREFIX)) return [];
  try {
    const [, inner] = decodeAbiParameters(
      [{ type: "bytes" }, { type: "bytes" }],
      `0x${data.slice(DEPLOYLESS_PREFIX.length)}`,
    );
    const decoded = decodeFunctionData({ abi: multicall3Abi, data: inner });
    if (decoded.functionName !== "aggregate3") return [];
    return decoded.args[0].map((call) => ({
      target: call.target.toLowerCase(),
      callData: call.callData.toLowerCase(),
    }));
  } catch {
    // Some other contract deployed for one call: not a multicall this module can read.
    return [];
  }
}

const RUN_SELECTOR = toFunctionSelector(
  staticCallBatchAbi.find((item) => item.name === "run")!,
).toLowerCase();

/**
 * The calls of a static-call batch (indexer/chain/static-call-batch.ts: tokenURIs and citizens'
 * components), each counted as the contract call it is.
 */
function staticBatchCalls(data: Hex): ViewCall[] {
  try {
    const decoded = decodeFunctionData({ abi: staticCallBatchAbi, data });
    return decoded.args[0].map((call) => ({
      target: call.target.toLowerCase(),
      callData: call.data.toLowerCase(),
    }));
  } catch {
    return [];
  }
}

/** Selector → function name over the ABIs given, to name the calls counted. */
export function functionNames(abis: readonly Abi[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const abi of abis) {
    for (const item of abi) {
      if (item.type !== "function") continue;
      names.set(toFunctionSelector(item), item.name);
    }
  }
  return names;
}

export function selectorOf(callData: string): Hex {
  return callData.slice(0, 10) as Hex;
}
