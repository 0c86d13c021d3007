import {
  type Abi,
  type Address,
  BaseError,
  type ContractFunctionName,
  getAbiItem,
  type Hex,
  toFunctionSelector,
} from "viem";

/** A view's calldata builder: its selector computed once, each argument a word or a string. */
export type PreparedCall = (args: readonly (bigint | Address | string)[]) => Hex;

/** The input types a prepared call encodes: words, and strings (a stake's configuration keys). */
export const PREPARED_TYPES: ReadonlySet<string> = new Set(["uint256", "address", "string"]);

const UINT256_LIMIT = 1n << 256n;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The calldata of `functionName` for any arguments, without viem's per-call work (it looks the
 * function up in the ABI and hashes its signature for every call, and sizes a string's words
 * with bigint arithmetic). Only for functions whose inputs are all uint256, address or string,
 * the views the indexer reads in bulk; anything else is refused here, once, when the builder is
 * made. The same bytes as encodeFunctionData (test/unit/prepared-call.test.ts). An S1 stake's
 * two string reads (identityCreditPoints, vaultCreditMultiplier) through encodeFunctionData were
 * a tenth of the worker's CPU per event in the replay of bench/worker-instructions.ts.
 */
export function prepareCall<const abi extends Abi>(
  abi: abi,
  functionName: ContractFunctionName<abi, "view" | "pure">,
): PreparedCall {
  const item = getAbiItem({ abi: abi as Abi, name: functionName as string });
  if (item?.type !== "function") throw new BaseError(`no function ${functionName} in the ABI`);
  const types = item.inputs.map((input) => input.type);
  if (types.some((type) => !PREPARED_TYPES.has(type))) {
    throw new BaseError(`${functionName}(${types.join(",")}) takes more than words and strings`);
  }
  const selector = toFunctionSelector(item);
  const dynamic = types.includes("string");
  return (args) => {
    if (args.length !== types.length) {
      throw new BaseError(`${functionName} takes ${types.length} arguments, got ${args.length}`);
    }
    let data: string = selector;
    if (!dynamic) {
      for (let i = 0; i < args.length; i++) data += wordOf(types[i]!, args[i]!);
      return data as Hex;
    }
    // The ABI's head and tail: a string's head is its tail's offset from the first head word.
    let tail = "";
    for (let i = 0; i < args.length; i++) {
      if (types[i] !== "string") {
        data += wordOf(types[i]!, args[i]!);
        continue;
      }
      data += (32 * types.length + tail.length / 2).toString(16).padStart(64, "0");
      tail += stringWords(args[i]!);
    }
    return `${data}${tail}` as Hex;
  };
}

/** A string's length word and its UTF-8 bytes, right-padded to whole words. */
function stringWords(value: bigint | string): string {
  if (typeof value !== "string") throw new BaseError(`not a string: ${String(value)}`);
  const hex = Buffer.from(value, "utf8").toString("hex");
  const bytes = hex.length / 2;
  return `${bytes.toString(16).padStart(64, "0")}${hex.padEnd(Math.ceil(bytes / 32) * 64, "0")}`;
}

function wordOf(type: string, value: bigint | string): string {
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
