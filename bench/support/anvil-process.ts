/**
 * Anvil for the scenario cache: a node dumps its state, historical states included, when it stops,
 * and later nodes load it. Request bodies are unlimited because the 100,000-event scenario's
 * batches pass anvil's default 2 MiB cap.
 */
import { startAnvil } from "../../devnet/anvil.ts";

export type StateFiles = {
  /** Written by anvil when it stops, with every kept historical state. */
  dumpTo?: string;
  /** Loaded at start; historical states in it answer eth_call at old blocks. */
  loadFrom?: string;
};

export type BenchAnvil = { rpcUrl: string; pid: number; stop(): Promise<void> };

export async function startStatefulAnvil(
  files: StateFiles,
  startTimeoutMs = 600_000,
): Promise<BenchAnvil> {
  const node = await startAnvil({
    dumpStateTo: files.dumpTo,
    loadStateFrom: files.loadFrom,
    unlimitedRequestSize: true,
    startTimeoutMs,
  });
  return { rpcUrl: node.rpcUrl, pid: node.process.pid, stop: node.stop };
}
