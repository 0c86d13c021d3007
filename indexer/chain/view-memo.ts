import {
  type Abi,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  encodeFunctionData,
  type PublicClient,
  type ReadContractReturnType,
} from "viem";
import type { BlockAt } from "./block-pin.ts";
import { readView } from "./view-read.ts";

/**
 * The view calls of one chunk, each distinct call (contract, calldata, block) made once: many
 * stakes share a configuration read (the "?" multiplier, a credit yield's points, a vault's
 * multiplier). Lives as long as one fetch, so a retry asks the node again.
 */
export class ViewMemo {
  private readonly calls = new Map<string, Promise<unknown>>();

  constructor(readonly client: PublicClient) {}

  read<
    const abi extends Abi,
    functionName extends ContractFunctionName<abi, "view" | "pure">,
    const args extends ContractFunctionArgs<abi, "view" | "pure", functionName>,
  >(
    request: {
      address: Address;
      abi: abi;
      functionName: functionName;
      args: args;
    } & BlockAt,
  ): Promise<ReadContractReturnType<abi, functionName, args>> {
    const data = encodeFunctionData({
      abi: request.abi,
      functionName: request.functionName,
      args: request.args,
    } as never);
    const key = `${request.address.toLowerCase()}@${request.blockNumber}/${request.blockHash}:${data}`;
    let call = this.calls.get(key);
    if (!call) {
      call = readView(this.client, request);
      this.calls.set(key, call);
    }
    return call as Promise<ReadContractReturnType<abi, functionName, args>>;
  }
}
