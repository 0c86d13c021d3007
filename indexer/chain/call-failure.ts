import {
  type Abi,
  AbiDecodingDataSizeTooSmallError,
  AbiDecodingZeroDataError,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  ExecutionRevertedError,
  type Hex,
  isHex,
  RawContractError,
  RpcRequestError,
  slice,
} from "viem";

/**
 * How an eth_call failed. `reverted` means the outcome is fixed by the chain: asked again at the
 * same block, the contract refuses again (a revert with or without data, a panic, an exceptional
 * halt, or an answer that does not decode). Anything else (network, timeout, HTTP 5xx or 429, an
 * error the node does not explain) may pass on a retry.
 */
export type CallFailure = { reverted: true; reason: string } | { reverted: false };

/** A view that refused at a block: data about the contract, not a fault of the node. */
export class ReadReverted extends Error {
  override name = "ReadReverted";
  readonly address: Address;
  readonly functionName: string;
  readonly args: readonly unknown[];
  readonly blockNumber: bigint;
  readonly reason: string;

  constructor(read: ContractRead, reason: string, options?: { cause?: unknown }) {
    const args = read.args ?? [];
    super(
      `${read.functionName}(${args.map(formatValue).join(", ")}) on ${read.address} at block ` +
        `${read.blockNumber} reverted: ${reason}`,
      options,
    );
    this.address = read.address;
    this.functionName = read.functionName;
    this.args = args;
    this.blockNumber = read.blockNumber;
    this.reason = reason;
  }
}

/** The call a ReadReverted names; `abi` (optional) lets custom errors decode to their names. */
export interface ContractRead {
  address: Address;
  functionName: string;
  args?: readonly unknown[];
  blockNumber: bigint;
  abi?: Abi;
}

/** What a failed read should throw: ReadReverted if the contract refused, else the error as is. */
export function readError(error: unknown, read: ContractRead): unknown {
  const failure = classifyCallFailure(error, read.abi);
  return failure.reverted ? new ReadReverted(read, failure.reason, { cause: error }) : error;
}

/**
 * Classifies any error viem throws for an eth_call: `readContract` through the deployless
 * multicall (ContractFunctionExecutionError > ContractFunctionRevertedError > CallExecutionError >
 * ExecutionRevertedError > RawContractError), `call` without batching (CallExecutionError >
 * ExecutionRevertedError > RpcRequestError code 3, or CallExecutionError > InternalRpcError for a
 * halt), and the decoding of what came back. The evidence is the node's own answer, not viem's
 * wrapper: viem also turns a bare -32603 "internal error" into ContractFunctionRevertedError, and a
 * provider's internal error is worth a retry.
 */
export function classifyCallFailure(error: unknown, abi?: Abi): CallFailure {
  if (!(error instanceof BaseError)) return { reverted: false };
  if (error.walk(isRevert)) return { reverted: true, reason: revertReason(error, abi) };
  const halt = error.walk(isHalt);
  if (halt instanceof BaseError) return { reverted: true, reason: halt.details };
  if (error.walk((cause) => cause instanceof AbiDecodingZeroDataError)) {
    return { reverted: true, reason: "returned no data" };
  }
  if (error.walk((cause) => cause instanceof AbiDecodingDataSizeTooSmallError)) {
    return { reverted: true, reason: "returned too little data for its type" };
  }
  return { reverted: false };
}

/**
 * RawContractError is a failed call inside a multicall that itself succeeded; code 3 (EIP-1474's
 * "execution reverted") and viem's ExecutionRevertedError (code 3 or a node saying "execution
 * reverted") are a REVERT opcode reported by the node.
 */
function isRevert(cause: unknown): boolean {
  return (
    cause instanceof RawContractError ||
    cause instanceof ExecutionRevertedError ||
    (cause instanceof RpcRequestError && cause.code === 3)
  );
}

/**
 * Exceptional halts (invalid opcode, out of gas, bad jump...) carry no revert code. Anvil answers
 * -32603 "EVM error <revm halt reason>"; geth -32000 with its vm error text. Only those names
 * count: the same codes also carry node trouble (anvil's fork-database errors, a provider's
 * internal error) that a retry can fix. Inside a multicall a halt is just a failed call with no
 * data, so this matters only for unbatched calls.
 */
const HALT =
  /^(EVM error (OutOfGas|MemoryOOG|MemoryLimitOOG|PrecompileOOG|InvalidOperandOOG|OpcodeNotFound|InvalidFEOpcode|InvalidJump|NotActivated|StackUnderflow|StackOverflow|OutOfOffset|CallTooDeep|StateChangeDuringStaticCall|CallNotAllowedInsideStatic|PrecompileError)\b|out of gas|invalid opcode|invalid jump destination|stack underflow|stack limit reached|write protection|return data out of bounds|max call depth exceeded)/;

function isHalt(cause: unknown): boolean {
  return cause instanceof RpcRequestError && HALT.test(cause.details);
}

function revertReason(error: BaseError, abi: Abi | undefined): string {
  // viem decoded the data with the call's own ABI on the readContract path.
  const decoded = error.walk((cause) => cause instanceof ContractFunctionRevertedError);
  if (decoded instanceof ContractFunctionRevertedError && decoded.data) {
    return describeError(decoded.data.errorName, decoded.data.args ?? []);
  }
  const carrier = error.walk((cause) => revertDataOf(cause) !== undefined);
  const data = carrier ? revertDataOf(carrier) : undefined;
  if (data === undefined || data === "0x") return "no data";
  try {
    const { errorName, args } = decodeErrorResult({ abi, data });
    return describeError(errorName, args ?? []);
  } catch {
    return `custom error ${slice(data, 0, 4)}`;
  }
}

function revertDataOf(cause: unknown): Hex | undefined {
  if (cause instanceof ContractFunctionRevertedError) return cause.raw;
  if (cause instanceof RawContractError) {
    const data = typeof cause.data === "object" ? cause.data.data : cause.data;
    return data;
  }
  if (cause instanceof RpcRequestError && isHex(cause.data)) return cause.data;
  return undefined;
}

/** Error(string) gives its message, Panic(uint256) its code, a custom error its name and args. */
function describeError(errorName: string, args: readonly unknown[]): string {
  if (errorName === "Error") return args[0] === "" ? "empty reason string" : String(args[0]);
  if (errorName === "Panic" && typeof args[0] === "bigint") {
    return `Panic(0x${args[0].toString(16).padStart(2, "0")})`;
  }
  return `${errorName}(${args.map(formatValue).join(", ")})`;
}

function formatValue(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
