/**
 * Many view calls to one eth_call through our own reader contract
 * (contracts/src/StaticCallBatch.sol), in place of viem's deployless multicall for the bulk reads
 * (citizens' components, stakes, token URIs). What it earns, on the components and stakes of the
 * 1,987 citizens staked at a 20k-event scenario chain's head (anvil, by block number, one client,
 * medians of 9 alternated rounds on a busy 2-core host): 151 eth_calls against the multicall's
 * 313, 160 ms of the reading process's CPU against 680, anvil's 80 ms against 170, and 0.4 s of
 * wall time against 1.5 s (`bun bench/static-call-batch.ts 20000 9`; at 10k events, 1,012
 * citizens: 79 against 161 eth_calls, 90 against 320 ms of CPU). Token URIs do not fit the
 * multicall at all: its answer is created code, capped at 24,576 bytes. A 100k-event backfill
 * takes 1,466 eth_calls (docs/performance.md, Backfill, Reads).
 */
import {
  type Address,
  BaseError,
  type Hex,
  HttpRequestError,
  keccak256,
  type PublicClient,
  type StateOverride,
  slice,
  stringToHex,
  TimeoutError,
} from "viem";
import { staticCallBatchDeployedBytecode } from "../../contracts/generated/StaticCallBatch.ts";
import { type BlockAt, blockAt, pinnedRead } from "./block-pin.ts";
import { decodeRun, encodeRun } from "./static-call-codec.ts";

/** One view call: the contract and its calldata. */
export interface StaticCall {
  to: Address;
  data: Hex;
}

/**
 * How a batch runs (contracts/src/StaticCallBatch.sol). The per-call gas cap is what stops one call
 * that halts (an invalid opcode, an endless loop) from starving the calls after it: it burns its
 * cap, not the batch. 10M leaves room for on-chain tokenURI builders (an SVG built and
 * base64-encoded in the contract takes a few million gas). The batch's total need not fit
 * cap × calls: the reader stops before a call it could not give the full cap and the rest go in the
 * next eth_call, so the node's own eth_call cap only bounds how many halts one eth_call absorbs
 * (geth, erigon and reth default to 50M, anvil to its block gas limit; a node holding eth_call to
 * EIP-7825's 16.7M transaction cap still fits one). A call that needs more than the cap is read
 * again alone, with all the gas the node gives an eth_call.
 *
 * 50 calls and 64 KiB of return data per eth_call: the transport bundles up to 32 requests in one
 * HTTP answer, which the transport refuses over 10 MiB (capped-answers.ts); 32 full answers are
 * ~4 MiB of hex.
 */
export const STATIC_CALL_BATCH = {
  gasPerCall: 10_000_000n,
  callsPerBatch: 50,
  maxAnswerBytes: 64 * 1024,
} as const;

/**
 * Where the reader's code sits for the call. Run through eth_call's state override rather than as
 * deployless creation code: created code returns its answer as contract code, capped at 24,576
 * bytes (EIP-170), too little for 50 token URIs of a few kB, and a revert-data answer would depend
 * on each node passing revert data through intact. The override is a normal call with a normal
 * answer; anvil, geth, erigon, nethermind, reth and the major providers serve it, and a node
 * that does not is read one call at a time, as before. No real contract lives at this address.
 */
const STATIC_CALL_BATCH_ADDRESS: Address = slice(
  keccak256(stringToHex("citizen-staking static call batch")),
  12,
);

/**
 * The return data of each call at `block` (by hash when given, block-pin.ts), or undefined where the batch has no answer for it:
 * the call failed (reverted, halted, ran out of its cap), its answer was too large for a batch, or
 * the node would not run the batch at all. Failures are rare and the single-call path tells them
 * apart best (a halt's name, a revert's data, the node's full gas), so the caller reads those
 * again one by one. Connection trouble (timeouts, 5xx, 429, network) is thrown for the job's retry:
 * the single calls would meet it too. `callsPerBatch` is lower for calls with large answers
 * (tokenURIs) than for calls answering a word (a citizen's components, the stake reads).
 * `stateOverride` goes beside the reader's own code: the calls see the block's state changed so.
 */
export async function readStaticCalls(
  client: PublicClient,
  calls: readonly StaticCall[],
  block: bigint | BlockAt,
  callsPerBatch: number = STATIC_CALL_BATCH.callsPerBatch,
  stateOverride: StateOverride = [],
): Promise<(Hex | undefined)[]> {
  const at = blockAt(block);
  const batches: StaticCall[][] = [];
  for (let start = 0; start < calls.length; start += callsPerBatch) {
    batches.push(calls.slice(start, start + callsPerBatch));
  }
  const answers = await Promise.all(
    batches.map((batch) => readBatch(client, batch, at, stateOverride)),
  );
  return answers.flat();
}

/** One batch, asked again for the calls the reader left unanswered until none are left. */
async function readBatch(
  client: PublicClient,
  calls: StaticCall[],
  block: BlockAt,
  stateOverride: StateOverride,
): Promise<(Hex | undefined)[]> {
  const answered: (Hex | undefined)[] = [];
  while (answered.length < calls.length) {
    const rest = calls.slice(answered.length);
    const results = await runReader(client, rest, block, stateOverride);
    // The node refused the batch, or gives an eth_call less gas than one call's cap.
    if (results === undefined || results.length === 0) {
      return [...answered, ...rest.map(() => undefined)];
    }
    for (const result of results) answered.push(result.success ? result.returnData : undefined);
  }
  return answered;
}

async function runReader(
  client: PublicClient,
  calls: StaticCall[],
  block: BlockAt,
  stateOverride: StateOverride,
) {
  try {
    const { data } = await pinnedRead(client, block, (at) =>
      client.call({
        to: STATIC_CALL_BATCH_ADDRESS,
        data: encodeRun(calls, STATIC_CALL_BATCH.gasPerCall, STATIC_CALL_BATCH.maxAnswerBytes),
        ...at,
        stateOverride: [
          { address: STATIC_CALL_BATCH_ADDRESS, code: staticCallBatchDeployedBytecode },
          ...stateOverride,
        ],
        // Not into viem's multicall: this is a batch of its own.
        batch: false,
      }),
    );
    return decodeRun(data ?? "0x");
  } catch (error) {
    if (isConnectionTrouble(error)) throw error;
    return undefined;
  }
}

/**
 * The node was not reached or did not answer in time, or said to come back later: the same
 * request may pass on a retry. Anything else is the node's answer to this batch (a refused
 * parameter or method, the reader failing as a whole), and the single calls may still pass.
 */
function isConnectionTrouble(error: unknown): boolean {
  if (!(error instanceof BaseError)) return true;
  if (error.walk((cause) => cause instanceof TimeoutError)) return true;
  const http = error.walk((cause) => cause instanceof HttpRequestError);
  if (!(http instanceof HttpRequestError)) return false;
  const { status } = http;
  return status === undefined || status < 400 || status >= 500 || status === 408 || status === 429;
}
