/**
 * Anvil started with state-file flags, which devnet/anvil.ts does not take: the scenario cache
 * dumps a node's state, historical states included, when the node exits, and later nodes load
 * it. The flags besides those are the devnet's (loopback, chain id, fifo, kept states, gas), and
 * one more: anvil refuses request bodies over 2 MiB by default, which both the scenario's setup
 * batches (a thousand transactions, some of them 130 kB identity-class writes) and the indexer's
 * JSON-RPC batches of multicalls (200 calls of up to ~30 kB each) exceed at 100,000 events.
 */
import {
  AnvilStartFailed,
  anvilBinaryPath,
  DEFAULT_BLOCK_GAS_LIMIT,
  DEFAULT_KEPT_STATES,
  DEVNET_CHAIN_ID,
  freePort,
} from "../../devnet/anvil.ts";

export type StateFiles = {
  /** Written by anvil when it exits (SIGINT), with every kept historical state. */
  dumpTo?: string;
  /** Loaded at start; historical states in it answer eth_call at old blocks. */
  loadFrom?: string;
};

export type BenchAnvil = { rpcUrl: string; pid: number; stop(): Promise<void> };

export async function startStatefulAnvil(
  files: StateFiles,
  startTimeoutMs = 600_000,
): Promise<BenchAnvil> {
  const port = await freePort();
  const args = [
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--chain-id",
    String(DEVNET_CHAIN_ID),
    "--auto-impersonate",
    "--order",
    "fifo",
    "--prune-history",
    String(DEFAULT_KEPT_STATES),
    "--gas-limit",
    String(DEFAULT_BLOCK_GAS_LIMIT),
    "--preserve-historical-states",
    "--no-request-size-limit",
    "--quiet",
  ];
  if (files.dumpTo) args.push("--dump-state", files.dumpTo);
  if (files.loadFrom) args.push("--load-state", files.loadFrom);
  const child = Bun.spawn([anvilBinaryPath(), ...args], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    // SIGINT, not SIGTERM: anvil writes --dump-state on its interrupt path; a dump of a large
    // state takes a while, so there is no kill deadline here.
    child.kill("SIGINT");
    await child.exited;
  };
  const rpcUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + startTimeoutMs;
  while (!(await answersChainId(rpcUrl))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new AnvilStartFailed(
        `anvil did not answer on ${rpcUrl} (exit code ${child.exitCode ?? "none"})`,
      );
    }
    await Bun.sleep(50);
  }
  return { rpcUrl, pid: child.pid, stop };
}

async function answersChainId(rpcUrl: string): Promise<boolean> {
  try {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    const body = (await response.json()) as { result?: string };
    return Number(body.result) === DEVNET_CHAIN_ID;
  } catch {
    return false;
  }
}
