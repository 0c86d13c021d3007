/**
 * Which failures of a node pass by themselves. A transport failure (a reset, a refused or timed
 * out connection, an HTTP 5xx or 429) or a node that is busy or lacks the block yet says
 * nothing about our settings: asked again later, the same request may well succeed. Everything
 * else is an answer: a refused key (401, 403), a method the node does not serve, a bad request.
 * A revert is an answer too, and callers that read contracts check for it first
 * (classifyCallFailure): viem puts a node's "execution reverted" over the same RPC codes.
 */
import {
  BaseError,
  HttpRequestError,
  RpcRequestError,
  SocketClosedError,
  TimeoutError,
  WebSocketRequestError,
} from "viem";

/** HTTP statuses of a server that is busy, restarting or behind a failing gateway. */
const PASSING_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * JSON-RPC codes of a node that cannot answer now: -32000 (geth's and erigon's "header not
 * found", "missing trie node" while syncing), -32001 resource not found (a block it lacks yet),
 * -32002 resource unavailable, -32005 limit exceeded, -32603 internal error, and providers'
 * rate limits (429 as a JSON-RPC code; QuickNode's -32007).
 */
const PASSING_RPC_CODES = new Set([-32000, -32001, -32002, -32005, -32007, -32603, 429]);

function passes(cause: unknown): boolean {
  if (cause instanceof TimeoutError || cause instanceof SocketClosedError) return true;
  if (cause instanceof WebSocketRequestError) return true;
  // No status: no answer at all (reset, refused, DNS, a body cut off).
  if (cause instanceof HttpRequestError) {
    return cause.status === undefined || PASSING_STATUS.has(cause.status);
  }
  if (cause instanceof RpcRequestError) {
    return (
      PASSING_RPC_CODES.has(cause.code) ||
      (cause.status !== undefined && PASSING_STATUS.has(cause.status))
    );
  }
  return false;
}

/** Whether the node may answer this request if it is asked again later. */
export function isTransientRpcFailure(error: unknown): boolean {
  return error instanceof BaseError && error.walk(passes) !== null;
}

/** The HTTP status the node answered with, if the failure carries one (viem's text omits it). */
export function httpStatusOf(error: unknown): number | undefined {
  if (!(error instanceof BaseError)) return undefined;
  const carrier = error.walk(
    (cause) =>
      (cause instanceof HttpRequestError || cause instanceof RpcRequestError) &&
      cause.status !== undefined,
  );
  return carrier instanceof HttpRequestError || carrier instanceof RpcRequestError
    ? carrier.status
    : undefined;
}
