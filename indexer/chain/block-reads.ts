/**
 * The one way the indexer reads a view at a block. Every read is pinned to its block by hash
 * where it has one (block-pin.ts: EIP-1898, the fallback to the number, NodeBehind), made once
 * per distinct call (contract, calldata, block) for as long as the reader lives, and, unless its
 * settings say otherwise, read many to an eth_call with the other calls asked at its block in
 * the same turn of the event loop. Make one per fetch (so a retry asks the node again), and one
 * per setting: a reader's settings hold for all its reads.
 */
import {
  type Abi,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  decodeFunctionResult,
  type Hex,
  type PublicClient,
  type ReadContractReturnType,
  type StateOverride,
} from "viem";
import { type BlockAt, pinnedRead } from "./block-pin.ts";
import { readError } from "./call-failure.ts";
import { readStaticCalls, STATIC_CALL_BATCH } from "./static-call-batch.ts";
import { calldataOf, decodeView, type ViewCall } from "./view-codec.ts";

/**
 * How a reader's calls go to the node.
 * - "views" (the default): many to an eth_call through the static-call reader
 *   (static-call-batch.ts), VIEWS_PER_BATCH to one; a call the batch has no clean answer for is
 *   read again alone through viem's multicall, the path these reads took before, so a view that
 *   reverts throws the same ReadReverted and any other failure is classified as it was.
 * - "large answers": the same at the reader's own size for answers of a few kB (token URIs,
 *   STATIC_CALL_BATCH.callsPerBatch), a call without a clean answer read again in an eth_call of
 *   its own: viem's deployless multicall returns its results as created code, capped at 24,576
 *   bytes (EIP-170).
 * - "alone": each call in an eth_call of its own, kept out of viem's multicall batching (it still
 *   shares the JSON-RPC batch): views whose answers outgrow any batch (whole staker positions), and
 *   single reads off the fetch path.
 */
export type Batching = "views" | "large answers" | "alone";

export interface BlockReadSettings {
  batching?: Batching;
  /** Every read sees its block's state with these accounts changed (a transaction's prestate). */
  stateOverride?: StateOverride;
}

/** A view call at a block (by hash when given). */
export type BlockRead<
  abi extends Abi,
  functionName extends ContractFunctionName<abi, "view" | "pure">,
  args extends ContractFunctionArgs<abi, "view" | "pure", functionName>,
> = { address: Address; abi: abi; functionName: functionName; args: args } & BlockAt;

export interface BlockReads {
  /**
   * The call's value at its block. A contract that refuses (or answers nothing decodable) throws
   * ReadReverted naming the call; node and network failures propagate unchanged for the retry
   * layer.
   */
  read<
    const abi extends Abi,
    functionName extends ContractFunctionName<abi, "view" | "pure">,
    const args extends ContractFunctionArgs<abi, "view" | "pure", functionName>,
  >(
    request: BlockRead<abi, functionName, args>,
  ): Promise<ReadContractReturnType<abi, functionName, args>>;
}

/**
 * Calls to an eth_call for "views": about as many as one of viem's multicalls took (3,000 bytes
 * of calldata, ~80 calls), so the count of eth_calls stays where it was. 100 calls of up to 68
 * bytes are ~50 kB of JSON, and 32 of them in one HTTP request stay under anvil's 2 MiB body cap.
 */
const VIEWS_PER_BATCH = 100;

/** Calls asked at one block in the same turn of the event loop, read together. */
interface Pending {
  at: BlockAt;
  calls: ViewCall[];
  /** Each call's calldata, made once when the call was asked (it is also the call's key). */
  data: Hex[];
  settle: ((value: unknown) => void)[];
}

export function createBlockReads(
  client: PublicClient,
  settings: BlockReadSettings = {},
): BlockReads {
  const { batching = "views", stateOverride } = settings;
  const made = new Map<string, Promise<unknown>>();
  const pending = new Map<string, Pending>();

  const readOne = (call: ViewCall, at: BlockAt): Promise<unknown> =>
    batching === "views"
      ? readThroughMulticall(client, call, at, stateOverride)
      : readAlone(client, call, at, stateOverride);

  const flush = (block: string, batch: Pending) => {
    pending.delete(block);
    const answers = readStaticCalls(
      client,
      batch.calls.map((call, i) => ({ to: call.address, data: batch.data[i]! })),
      batch.at,
      batching === "views" ? VIEWS_PER_BATCH : STATIC_CALL_BATCH.callsPerBatch,
      stateOverride,
    );
    // One continuation for the whole batch, each call settled from it in turn.
    answers.then(
      (returned) => {
        batch.settle.forEach((settle, i) => {
          const call = batch.calls[i]!;
          try {
            const answer = returned[i];
            const value = answer === undefined ? undefined : decodeView(call, answer);
            settle(value !== undefined ? value : readOne(call, batch.at));
          } catch (error) {
            settle(Promise.reject(error));
          }
        });
      },
      (error: unknown) => {
        for (const settle of batch.settle) settle(Promise.reject(error));
      },
    );
  };

  const schedule = (block: string, at: BlockAt, call: ViewCall, data: Hex): Promise<unknown> => {
    let batch = pending.get(block);
    if (!batch) {
      const opened: Pending = { at, calls: [], data: [], settle: [] };
      batch = opened;
      pending.set(block, opened);
      // A macrotask, as viem's batching waits: the reads a stake makes after its first ones
      // resolve come in microtasks, and all of one round join the same batch.
      setTimeout(() => flush(block, opened), 0);
    }
    batch.calls.push(call);
    batch.data.push(data);
    const { settle } = batch;
    return new Promise<unknown>((resolve) => settle.push(resolve));
  };

  return {
    read(request) {
      const { address, abi, functionName, args, blockNumber, blockHash } = request;
      const call: ViewCall = { address, abi, functionName, args: args as readonly unknown[] };
      const at: BlockAt = { blockNumber, blockHash };
      const block = `${blockNumber}/${blockHash}`;
      const data = calldataOf(call);
      const key = `${address.toLowerCase()}@${block}:${data}`;
      let value = made.get(key);
      if (!value) {
        value = batching === "alone" ? readOne(call, at) : schedule(block, at, call, data);
        made.set(key, value);
      }
      return value as never;
    },
  };
}

/**
 * One call through the client's multicall batching: by hash through viem's multicall (its
 * readContract leaves batching out for a block hash), by number through readContract.
 */
async function readThroughMulticall(
  client: PublicClient,
  call: ViewCall,
  block: BlockAt,
  stateOverride: StateOverride | undefined,
): Promise<unknown> {
  try {
    // The casts: viem types a generic ABI's call parameters only once the ABI is narrowed.
    return await pinnedRead(client, block, (at) =>
      "blockHash" in at
        ? client
            .multicall({ contracts: [call], allowFailure: false, stateOverride, ...at } as never)
            .then((results) => (results as unknown[])[0])
        : client.readContract({ ...call, stateOverride, ...at } as never),
    );
  } catch (error) {
    throw readError(error, { ...call, ...block });
  }
}

/** One call in an eth_call of its own, decoded from its own answer. */
async function readAlone(
  client: PublicClient,
  call: ViewCall,
  block: BlockAt,
  stateOverride: StateOverride | undefined,
): Promise<unknown> {
  const data = calldataOf(call);
  try {
    const answer = await pinnedRead(client, block, (at) =>
      client.call({
        to: call.address,
        data,
        ...at,
        ...(stateOverride ? { stateOverride } : {}),
        batch: false,
      }),
    );
    return decodeFunctionResult({ ...call, data: answer.data ?? "0x" } as never);
  } catch (error) {
    throw readError(error, { ...call, ...block });
  }
}
