import type {
  Abi,
  Address,
  ContractFunctionArgs,
  ContractFunctionName,
  PublicClient,
  ReadContractReturnType,
  StateOverride,
} from "viem";
import { type BlockAt, pinnedRead } from "./block-pin.ts";
import { readError } from "./call-failure.ts";

/**
 * A view call at a block through the client's multicall batching, by the block's hash when it has
 * one (block-pin.ts): calls at the same block still fold into one multicall. A contract that
 * refuses throws ReadReverted naming the call; node and network failures propagate unchanged for
 * the retry layer. `stateOverride` changes the block's state the call sees.
 */
export async function readView<
  const abi extends Abi,
  functionName extends ContractFunctionName<abi, "view" | "pure">,
  const args extends ContractFunctionArgs<abi, "view" | "pure", functionName>,
>(
  client: PublicClient,
  request: {
    address: Address;
    abi: abi;
    functionName: functionName;
    args: args;
    stateOverride?: StateOverride;
  } & BlockAt,
): Promise<ReadContractReturnType<abi, functionName, args>> {
  const { address, abi, functionName, args, stateOverride } = request;
  const contract = { address, abi, functionName, args };
  try {
    // viem's readContract leaves multicall batching out for a block hash; its multicall keeps it.
    // The casts: viem types a generic ABI's call parameters only once the ABI is narrowed.
    const result = await pinnedRead(client, request, (at) =>
      "blockHash" in at
        ? client
            .multicall({
              contracts: [contract],
              allowFailure: false,
              stateOverride,
              ...at,
            } as never)
            .then((results) => (results as unknown[])[0])
        : client.readContract({ ...contract, stateOverride, ...at } as never),
    );
    return result as ReadContractReturnType<abi, functionName, args>;
  } catch (error) {
    // viem types a function's args as `unknown` until the ABI narrows it; they are a tuple.
    throw readError(error, { ...request, args: request.args as readonly unknown[] });
  }
}
