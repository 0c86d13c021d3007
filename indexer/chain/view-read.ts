import type {
  Abi,
  Address,
  ContractFunctionArgs,
  ContractFunctionName,
  PublicClient,
  ReadContractReturnType,
} from "viem";
import { readError } from "./call-failure.ts";

/**
 * A view call at a block through the client's multicall batching. A contract that refuses throws
 * ReadReverted naming the call; node and network failures propagate unchanged for the retry layer.
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
    blockNumber: bigint;
  },
): Promise<ReadContractReturnType<abi, functionName, args>> {
  try {
    return (await client.readContract(request as never)) as ReadContractReturnType<
      abi,
      functionName,
      args
    >;
  } catch (error) {
    // viem types a function's args as `unknown` until the ABI narrows it; they are a tuple.
    throw readError(error, { ...request, args: request.args as readonly unknown[] });
  }
}
