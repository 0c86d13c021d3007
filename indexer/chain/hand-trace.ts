import {
  type Address,
  BaseError,
  decodeFunctionData,
  getAbiItem,
  type Hash,
  type Hex,
  isAddressEqual,
  MethodNotFoundRpcError,
  MethodNotSupportedRpcError,
  type PublicClient,
  RpcRequestError,
  toFunctionSelector,
} from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";

/**
 * The Hand flag lives only in a stake's calldata (its fifth word, docs/staker.md §7). A stake sent
 * through a contract wallet (a Safe, a multicall, a forwarder) has that calldata in an inner call,
 * which only the node's call trace shows.
 */

/** The node has neither debug_traceTransaction nor trace_transaction. */
export class TraceUnavailable extends Error {
  override name = "TraceUnavailable";
}

/** The trace holds fewer successful S1 stake calls of the citizen than the stake asked for. */
export class StakeNotInTrace extends Error {
  override name = "StakeNotInTrace";
}

export interface StakeInTransaction {
  transactionHash: Hash;
  staker: Address;
  citizenId: bigint;
  /** Which Stake of this S1 citizen in the transaction (0-based, in log order). */
  occurrence: number;
}

/** A successful `stake` call of an S1 citizen, as the staker received it. */
export interface S1StakeCall {
  citizenId: bigint;
  handClaimant: bigint;
}

const S1_CITIZEN_ASSET = 0;
/** Only 1 is a claim: the staker silently stakes 2 or 255 as no claim. */
const HAND_CLAIM = 1n;
const STAKE_SELECTOR = toFunctionSelector(getAbiItem({ abi: stakerAbi, name: "stake" }));

/** Whether the stake's call to the staker carried handClaimant == 1. */
export async function readHandClaim(
  client: PublicClient,
  stake: StakeInTransaction,
): Promise<boolean> {
  const calls = (await readS1StakeCalls(client, stake.transactionHash, stake.staker)).filter(
    (call) => call.citizenId === stake.citizenId,
  );
  const call = calls[stake.occurrence];
  if (!call) {
    throw new StakeNotInTrace(
      `transaction ${stake.transactionHash} holds ${calls.length} successful S1 stake call(s) of ` +
        `citizen ${stake.citizenId} to ${stake.staker}, so it has no occurrence ${stake.occurrence}`,
    );
  }
  return call.handClaimant === HAND_CLAIM;
}

/**
 * Every S1 `stake` call to the staker that took effect in the transaction, in execution order:
 * a frame that failed, or whose caller's frame failed, changed nothing and logged nothing.
 */
export async function readS1StakeCalls(
  client: PublicClient,
  transactionHash: Hash,
  staker: Address,
): Promise<S1StakeCall[]> {
  const frames = await traceCalls(client, transactionHash);
  return frames
    .filter(
      (frame) =>
        frame.callType === "call" &&
        frame.to !== undefined &&
        isAddressEqual(frame.to, staker) &&
        frame.input.slice(0, 10).toLowerCase() === STAKE_SELECTOR,
    )
    .map((frame) => decodeFunctionData({ abi: stakerAbi, data: frame.input }))
    .flatMap(({ functionName, args }) =>
      functionName === "stake" && args[0] === S1_CITIZEN_ASSET
        ? [{ citizenId: args[2], handClaimant: args[4] }]
        : [],
    );
}

/** A call frame that took effect (it and all its ancestors succeeded): the fields read here. */
interface TracedCall {
  callType: string;
  to?: Address;
  input: Hex;
}

type TraceMethod = "debug_traceTransaction" | "trace_transaction";
const TRACE_METHODS: readonly TraceMethod[] = ["debug_traceTransaction", "trace_transaction"];

/**
 * What each client's node answered: the method that worked, or when it was found to trace not at
 * all. A node without debug_ then gets one trace call per transaction, not a refusal first; a node
 * without either is asked again only after a while (it may be restarted with the API on).
 */
const traceSupport = new WeakMap<PublicClient, TraceMethod | { unavailableSince: number }>();
const RECHECK_UNAVAILABLE_MS = 10 * 60_000;

async function traceCalls(client: PublicClient, transactionHash: Hash): Promise<TracedCall[]> {
  const known = traceSupport.get(client);
  if (typeof known === "object" && Date.now() - known.unavailableSince < RECHECK_UNAVAILABLE_MS) {
    throw traceUnavailable(transactionHash);
  }
  const methods =
    typeof known === "string"
      ? [known, ...TRACE_METHODS.filter((method) => method !== known)]
      : TRACE_METHODS;
  for (const method of methods) {
    try {
      const calls =
        method === "debug_traceTransaction"
          ? await callTracerCalls(client, transactionHash)
          : await parityTraceCalls(client, transactionHash);
      traceSupport.set(client, method);
      return calls;
    } catch (error) {
      if (!isMethodUnavailable(error)) throw error;
    }
  }
  traceSupport.set(client, { unavailableSince: Date.now() });
  throw traceUnavailable(transactionHash);
}

function traceUnavailable(transactionHash: Hash): TraceUnavailable {
  return new TraceUnavailable(
    `the node answers neither debug_traceTransaction (callTracer) nor trace_transaction, so the ` +
      `Hand flag of ${transactionHash} cannot be read from a trace`,
  );
}

/**
 * How nodes say they do not serve a method: JSON-RPC -32601 / -32004, or an error whose text says
 * so (providers that answer -32000 "method not whitelisted", "namespace is disabled", or a debug
 * API without the tracer asked for: the callTracer here, the prestateTracer in stake-prestate.ts).
 */
const UNAVAILABLE =
  /method .*(not found|does not exist|not available|not supported|unsupported|not whitelisted|not allowed)|unsupported method|namespace .*(disabled|not enabled)|(unknown|unsupported) tracer|tracer .*not (found|supported)/i;

export function isMethodUnavailable(error: unknown): boolean {
  return (
    error instanceof BaseError &&
    error.walk(
      (cause) =>
        cause instanceof MethodNotFoundRpcError ||
        cause instanceof MethodNotSupportedRpcError ||
        (cause instanceof RpcRequestError && UNAVAILABLE.test(cause.details)),
    ) !== null
  );
}

/** geth's callTracer: a tree of frames, children in execution order. */
interface CallFrame {
  type: string;
  to?: Address;
  input: Hex;
  error?: string;
  calls?: CallFrame[];
}

async function callTracerCalls(client: PublicClient, transactionHash: Hash) {
  const root = await client.request<{
    Parameters: [Hash, { tracer: "callTracer" }];
    ReturnType: CallFrame;
  }>({ method: "debug_traceTransaction", params: [transactionHash, { tracer: "callTracer" }] });
  const calls: TracedCall[] = [];
  const visit = (frame: CallFrame) => {
    // A failed frame's effects, its children's included, were rolled back.
    if (frame.error !== undefined) return;
    calls.push({ callType: frame.type.toLowerCase(), to: frame.to, input: frame.input });
    for (const child of frame.calls ?? []) visit(child);
  };
  visit(root);
  return calls;
}

/** Parity/OpenEthereum's trace_transaction: a flat list, each frame placed by its traceAddress. */
interface FlatTrace {
  type: string;
  action: { callType?: string; to?: Address; input?: Hex };
  error?: string;
  traceAddress: number[];
}

async function parityTraceCalls(client: PublicClient, transactionHash: Hash) {
  const traces = await client.request<{ Parameters: [Hash]; ReturnType: FlatTrace[] }>({
    method: "trace_transaction",
    params: [transactionHash],
  });
  const failed = traces.filter((trace) => trace.error !== undefined);
  return traces
    .filter(
      (trace) =>
        !failed.some((failure) => isPrefix(failure.traceAddress, trace.traceAddress)) &&
        trace.type === "call",
    )
    .sort((a, b) => compareTraceAddresses(a.traceAddress, b.traceAddress))
    .map(
      (trace): TracedCall => ({
        callType: trace.action.callType ?? "call",
        to: trace.action.to,
        input: trace.action.input ?? "0x",
      }),
    );
}

function isPrefix(prefix: readonly number[], address: readonly number[]): boolean {
  return prefix.length <= address.length && prefix.every((index, at) => address[at] === index);
}

/** Depth-first pre-order, the order the calls ran in: a parent before its children. */
function compareTraceAddresses(a: readonly number[], b: readonly number[]): number {
  for (let at = 0; at < Math.min(a.length, b.length); at++) {
    const difference = (a[at] as number) - (b[at] as number);
    if (difference !== 0) return difference;
  }
  return a.length - b.length;
}
