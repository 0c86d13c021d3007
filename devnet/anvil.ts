/**
 * Starts and stops a local anvil node from the @foundry-rs/anvil npm package, configured for the
 * devnet: loopback only, any sender accepted, fifo ordering and every block's state kept queryable.
 */

import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";

export const DEVNET_CHAIN_ID = 31337;

/**
 * How many block states anvil keeps in memory. The indexer reads views at the block of every
 * stake, so no state may be dropped during a run; anvil only keeps a state when the block is
 * mined, so this bounds memory by block count, not by transaction count. With `--prune-history`
 * anvil writes no states to disk (by default it spills old ones under ~/.foundry, where they
 * outlive the process and are slow to read).
 */
export const DEFAULT_KEPT_STATES = 100_000;

/**
 * Block states the demo's node keeps (and blocks whose transactions it keeps), for a seeded
 * scenario expected to span `scenarioBlocks` blocks. The demo's indexer reads the deployment's
 * and the scenario's states once, catching up before live activity starts (twice the expected
 * blocks covers the deployment's 17 and a scenario that runs long), then each new block's as it
 * follows: 32 more let it fall a minute behind at a block every 2 s. Keeping every state, the
 * demo's node grew ~0.5 MB a block (15-20 MB a minute); keeping these (92 for the default
 * scenario), a day's 43,200 live blocks mined at full speed ended near 1 GB. Anvil 1.7 still
 * grows, in steps, with the states kept times the blocks mined, pruned or not (64 states: 0.5 GB
 * after as many empty blocks, 128: 0.9 GB), so fewer states grow it less.
 */
export function demoKeptStates(scenarioBlocks: number): number {
  return 2 * scenarioBlocks + 32;
}

/** How long a start waits for anvil to bind its port, unless told otherwise. */
export const ANVIL_START_TIMEOUT_MS = 15_000;

/** Large enough that a block holds every transaction the scenario sends for it. */
export const DEFAULT_BLOCK_GAS_LIMIT = 1_000_000_000n;

export type AnvilOptions = {
  /** Loopback port; a free one is picked when absent. */
  port?: number;
  /** Interval mining; absent means a block per transaction (automine). */
  blockTimeSeconds?: number;
  /** Block states kept in memory (and so readable with eth_call at that block). */
  pruneHistory?: number;
  /** Blocks whose transactions anvil keeps (--transaction-block-keeper); absent: all. */
  keptTransactionBlocks?: number;
  blockGasLimit?: bigint;
  /** Genesis timestamp (unix seconds); absent means now. */
  genesisTimestamp?: number;
  /** Milliseconds to wait for the node to bind its port. */
  startTimeoutMs?: number;
  /** Written when the node stops (with SIGINT, anvil's dump path), historical states included. */
  dumpStateTo?: string;
  /** Loaded at start; its historical states keep eth_call working at old blocks. */
  loadStateFrom?: string;
  /** Anvil refuses request bodies over 2 MiB unless told not to. */
  unlimitedRequestSize?: boolean;
};

export type AnvilNode = {
  rpcUrl: string;
  /** The port our anvil bound (the one asked for, or the one the OS gave it). */
  port: number;
  process: Bun.Subprocess<"ignore", "pipe", "pipe">;
  stop(): Promise<void>;
};

export class AnvilNotInstalled extends Error {
  override name = "AnvilNotInstalled";
}

export class AnvilStartFailed extends Error {
  override name = "AnvilStartFailed";
}

/** Something else holds the port asked for; whatever answers there is not our node. */
export class AnvilPortInUse extends AnvilStartFailed {
  override name = "AnvilPortInUse";
  constructor(readonly port: number) {
    super(`anvil could not listen on 127.0.0.1:${port}: the port is already in use`);
  }
}

const require = createRequire(import.meta.url);

/** The platform package of @foundry-rs/anvil that holds the native binary. */
export function anvilBinaryPath(): string {
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  let packageDir: string;
  try {
    packageDir = dirname(require.resolve(`${platformPackage}/package.json`));
  } catch {
    throw new AnvilNotInstalled(
      `${platformPackage} is not installed; run \`bun install\` (it comes with the @foundry-rs/anvil ` +
        `dev dependency), or \`bun add -d ${platformPackage}\` if optional dependencies were skipped`,
    );
  }
  return join(packageDir, "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === "object") resolve(address.port);
        else reject(new AnvilStartFailed("the OS gave no free port"));
      });
    });
  });
}

/** Whether nothing listens on 127.0.0.1:`port` (a listener there or on 0.0.0.0 makes it taken). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });
}

/** Keeps the last few KB of anvil's stderr so a failed start can say why. */
function collectTail(stream: ReadableStream<Uint8Array>): () => string {
  let tail = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of stream) tail = (tail + decoder.decode(chunk)).slice(-4096);
  })();
  return () => tail.trim();
}

/**
 * Resolves with the port of anvil's "Listening on 127.0.0.1:PORT" line, which it prints once its
 * own socket is bound; undefined when stdout ends without it (anvil exited). The rest of stdout
 * (a line per RPC call) is read and dropped, so the pipe never fills.
 */
function listeningPort(stream: ReadableStream<Uint8Array>): Promise<number | undefined> {
  return new Promise((resolve) => {
    const decoder = new TextDecoder();
    let head = "";
    let found = false;
    void (async () => {
      for await (const chunk of stream) {
        if (found) continue;
        head += decoder.decode(chunk, { stream: true });
        const match = /^Listening on 127\.0\.0\.1:(\d+)$/m.exec(head);
        if (match) {
          found = true;
          head = "";
          resolve(Number(match[1]));
        }
      }
      resolve(undefined);
    })();
  });
}

/**
 * Starts our own anvil. It succeeds only once the child itself has bound its port: a node that
 * merely answers on the port may be another process's (a demo already running on 8545), and
 * sending our transactions to it would corrupt both runs. Without `port`, anvil binds port 0 and
 * reports the one the OS gave it, so no other process can take it between choice and bind.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilNode> {
  const args = [
    "--host",
    "127.0.0.1",
    "--port",
    String(options.port ?? 0),
    "--chain-id",
    String(DEVNET_CHAIN_ID),
    "--auto-impersonate",
    "--order",
    "fifo",
    "--prune-history",
    String(options.pruneHistory ?? DEFAULT_KEPT_STATES),
    "--gas-limit",
    String(options.blockGasLimit ?? DEFAULT_BLOCK_GAS_LIMIT),
  ];
  if (options.keptTransactionBlocks !== undefined) {
    args.push("--transaction-block-keeper", String(options.keptTransactionBlocks));
  }
  if (options.blockTimeSeconds !== undefined) {
    args.push("--block-time", String(options.blockTimeSeconds));
  }
  if (options.genesisTimestamp !== undefined) {
    args.push("--timestamp", String(options.genesisTimestamp));
  }
  if (options.dumpStateTo || options.loadStateFrom) args.push("--preserve-historical-states");
  if (options.dumpStateTo) args.push("--dump-state", options.dumpStateTo);
  if (options.loadStateFrom) args.push("--load-state", options.loadStateFrom);
  if (options.unlimitedRequestSize) args.push("--no-request-size-limit");

  const child = Bun.spawn([anvilBinaryPath(), ...args], {
    stdin: "ignore",
    // Not --quiet: the "Listening on" line is how we know the child bound the port.
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderrTail = collectTail(child.stderr);
  const bound = listeningPort(child.stdout);
  // An interrupted test or script must not leave the node running.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (options.dumpStateTo) {
      // Writing a large state takes a while: no kill deadline on the dump path.
      child.kill("SIGINT");
      await child.exited;
      return;
    }
    child.kill("SIGTERM");
    const escalate = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await child.exited;
    clearTimeout(escalate);
  };

  const timeoutMs = options.startTimeoutMs ?? ANVIL_START_TIMEOUT_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const port = await Promise.race([
    bound,
    new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (typeof port === "number") {
    return { rpcUrl: `http://127.0.0.1:${port}`, port, process: child, stop };
  }
  const exitCode = port === "timeout" ? "none" : await child.exited;
  await stop();
  const output = stderrTail();
  if (options.port !== undefined && /address already in use/i.test(output)) {
    throw new AnvilPortInUse(options.port);
  }
  throw new AnvilStartFailed(
    port === "timeout"
      ? `anvil did not bind 127.0.0.1:${options.port ?? "(any port)"} within ${timeoutMs} ms: ${output || "no output"}`
      : `anvil exited with code ${exitCode} before it listened: ${output || "no output"}`,
  );
}
