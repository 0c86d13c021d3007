import type {
  Abi,
  Address,
  ContractFunctionArgs,
  ContractFunctionName,
  PublicClient,
  ReadContractReturnType,
  StateOverride,
} from "viem";
import { type BatchedView, calldataOf, readBatchedViews } from "./batched-views.ts";
import type { BlockAt } from "./block-pin.ts";

/** Calls asked at one block in the same turn of the event loop, read together. */
interface Pending {
  at: BlockAt;
  calls: BatchedView[];
  settle: ((value: Promise<unknown>) => void)[];
}

/**
 * The view calls of one chunk, each distinct call (contract, calldata, block) made once: many
 * stakes share a configuration read (the "?" multiplier, a credit yield's points, a vault's
 * multiplier). The calls asked at one block in one turn of the event loop go together, many to
 * an eth_call (batched-views.ts), as viem's multicall batching grouped them before. Lives as long
 * as one fetch, so a retry asks the node again. With `stateOverride`, every read sees its block's
 * state with those accounts' storage changed (a transaction's prestate, stake-prestate.ts).
 */
export class ViewMemo {
  private readonly calls = new Map<string, Promise<unknown>>();
  private readonly pending = new Map<string, Pending>();

  constructor(
    readonly client: PublicClient,
    readonly stateOverride?: StateOverride,
  ) {}

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
    const { address, abi, functionName, args, blockNumber, blockHash } = request;
    const view = { address, abi, functionName, args: args as readonly unknown[] };
    const block = `${blockNumber}/${blockHash}`;
    const key = `${address.toLowerCase()}@${block}:${calldataOf(view)}`;
    let call = this.calls.get(key);
    if (!call) {
      call = this.schedule(block, { blockNumber, blockHash }, view);
      this.calls.set(key, call);
    }
    return call as Promise<ReadContractReturnType<abi, functionName, args>>;
  }

  private schedule(block: string, at: BlockAt, view: BatchedView): Promise<unknown> {
    let batch = this.pending.get(block);
    if (!batch) {
      const pending: Pending = { at, calls: [], settle: [] };
      batch = pending;
      this.pending.set(block, pending);
      // A macrotask, as viem's batching waits: the reads a stake makes after its first ones
      // resolve come in microtasks, and all of one round join the same batch.
      setTimeout(() => this.flush(block, pending), 0);
    }
    batch.calls.push(view);
    const { settle } = batch;
    return new Promise<unknown>((resolve) => settle.push(resolve));
  }

  private flush(block: string, batch: Pending) {
    this.pending.delete(block);
    const reads = readBatchedViews(this.client, batch.calls, batch.at, this.stateOverride);
    batch.settle.forEach((settle, i) => {
      settle(reads[i]!);
    });
  }
}
