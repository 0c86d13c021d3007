import { type Address, decodeFunctionData, type Hex, type PublicClient } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { createBlockReads } from "./block-reads.ts";
import { readHandClaim, TraceUnavailable } from "./hand-trace.ts";

/** What the stake call said about the Hand claim, and where that was read. */
export interface HandFlagReading {
  claim: boolean;
  source: "calldata" | "trace" | "inferred";
}

/**
 * The Hand flag of one S1 stake, read from the call itself (docs/staker.md §7: it is only in the
 * stake call's fifth word). A transaction sent straight to the staker carries it in its own
 * calldata; one sent through a contract wallet (a Safe, a multicall, any forwarder) hides it in
 * an inner call, read from the node's call trace. A node without a trace API leaves it
 * `inferred`: no claim assumed, and the row says so.
 */
export async function readHandFlag(
  client: PublicClient,
  staker: Address,
  stake: { transactionHash: Hex; citizenId: bigint; occurrence: number },
): Promise<HandFlagReading> {
  const transaction = await client.getTransaction({ hash: stake.transactionHash });
  if (transaction.to?.toLowerCase() === staker.toLowerCase()) {
    const call = decodeFunctionData({ abi: stakerAbi, data: transaction.input });
    if (call.functionName === "stake") return { claim: call.args[4] === 1n, source: "calldata" };
  }
  try {
    const claim = await readHandClaim(client, {
      transactionHash: stake.transactionHash,
      staker,
      citizenId: stake.citizenId,
      occurrence: stake.occurrence,
    });
    return { claim, source: "trace" };
  } catch (error) {
    if (error instanceof TraceUnavailable) return { claim: false, source: "inferred" };
    throw error;
  }
}

/** An S1 stake whose Hand flag was inferred, as the store keeps it. */
export interface InferredHandStake {
  blockNumber: bigint;
  transactionHash: Hex;
  citizenId: bigint;
  /** Which S1 stake of this citizen in its transaction (0-based, in log order). */
  occurrence: number;
  /** The multiplier served meanwhile: the vault's own (or 100), as with no claim. */
  vaultMultiplier: bigint;
}

/**
 * Settles an inferred Hand flag from the node's call trace, now that the node may offer one:
 * the flag, and the vault multiplier the stake applied (vaultCreditMultiplier("?") as of the
 * stake's block for a claim, else the one already stored). Undefined while the node still
 * traces nothing.
 */
export async function settleInferredHandFlag(
  client: PublicClient,
  staker: Address,
  stake: InferredHandStake,
): Promise<{ claim: boolean; vaultMultiplier: bigint } | undefined> {
  let claim: boolean;
  try {
    claim = await readHandClaim(client, { ...stake, staker });
  } catch (error) {
    if (error instanceof TraceUnavailable) return undefined;
    throw error;
  }
  if (!claim) return { claim, vaultMultiplier: stake.vaultMultiplier };
  const vaultMultiplier = await createBlockReads(client, { batching: "alone" }).read({
    address: staker,
    abi: stakerAbi,
    functionName: "vaultCreditMultiplier",
    args: ["?"],
    blockNumber: stake.blockNumber,
  });
  return { claim, vaultMultiplier };
}
