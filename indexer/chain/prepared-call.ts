import {
  type Abi,
  type Address,
  BaseError,
  type ContractFunctionName,
  getAbiItem,
  type Hex,
  toFunctionSelector,
} from "viem";

/** A view's calldata builder: its selector computed once, each argument a 32-byte word. */
export type PreparedCall = (args: readonly (bigint | Address)[]) => Hex;

const UINT256_LIMIT = 1n << 256n;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The calldata of `functionName` for any arguments, without viem's per-call work (it looks the
 * function up in the ABI and hashes its signature for every call). Only for functions whose
 * inputs are all uint256 or address, the views the indexer reads in bulk; anything else is
 * refused here, once, when the builder is made. The same bytes as encodeFunctionData
 * (test/unit/prepared-call.test.ts).
 */
export function prepareCall<const abi extends Abi>(
  abi: abi,
  functionName: ContractFunctionName<abi, "view" | "pure">,
): PreparedCall {
  const item = getAbiItem({ abi: abi as Abi, name: functionName as string });
  if (item?.type !== "function") throw new BaseError(`no function ${functionName} in the ABI`);
  const types = item.inputs.map((input) => input.type);
  if (types.some((type) => type !== "uint256" && type !== "address")) {
    throw new BaseError(`${functionName}(${types.join(",")}) takes more than words`);
  }
  const selector = toFunctionSelector(item);
  return (args) => {
    if (args.length !== types.length) {
      throw new BaseError(`${functionName} takes ${types.length} arguments, got ${args.length}`);
    }
    let data: string = selector;
    for (let i = 0; i < args.length; i++) data += wordOf(types[i]!, args[i]!);
    return data as Hex;
  };
}

function wordOf(type: string, value: bigint | Address): string {
  if (type === "address") {
    if (typeof value !== "string" || !ADDRESS.test(value)) {
      throw new BaseError(`not an address: ${String(value)}`);
    }
    return value.slice(2).toLowerCase().padStart(64, "0");
  }
  if (typeof value !== "bigint" || value < 0n || value >= UINT256_LIMIT) {
    throw new BaseError(`not a uint256: ${String(value)}`);
  }
  return value.toString(16).padStart(64, "0");
}
