import {
  type Abi,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type DecodeFunctionResultReturnType,
  decodeFunctionResult,
  encodeFunctionData,
  type PublicClient,
} from "viem";
import { type BlockAt, pinnedRead } from "./block-pin.ts";
import { readError } from "./call-failure.ts";

/**
 * A view call kept out of viem's multicall batching (it still shares the JSON-RPC batch). The
 * deployless multicall returns its results as created code, capped at 24,576 bytes (EIP-170), so
 * views with large results (whole staker positions) go one eth_call each; token URIs go many to an
 * eth_call through static-call-batch.ts and come here only when the batch has no clean answer. A
 * contract that refuses (or answers nothing decodable) throws ReadReverted naming the call.
 */
export async function readUnbatched<
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
  } & BlockAt,
): Promise<DecodeFunctionResultReturnType<abi, functionName, args>> {
  const calldata = encodeFunctionData({
    abi: request.abi,
    functionName: request.functionName,
    args: request.args,
  } as never);
  try {
    const { data } = await pinnedRead(client, request, (at) =>
      client.call({ to: request.address, data: calldata, ...at, batch: false }),
    );
    return decodeFunctionResult({
      abi: request.abi,
      functionName: request.functionName,
      args: request.args,
      data: data ?? "0x",
    } as never) as DecodeFunctionResultReturnType<abi, functionName, args>;
  } catch (error) {
    // viem types a function's args as `unknown` until the ABI narrows it; they are a tuple.
    throw readError(error, { ...request, args: request.args as readonly unknown[] });
  }
}
