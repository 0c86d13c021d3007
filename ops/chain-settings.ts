import { existsSync } from "node:fs";
import type { Address, PublicClient } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { classifyCallFailure } from "../indexer/chain/call-failure.ts";
import { createChainClient } from "../indexer/chain/client.ts";
import { findDeploymentBlock } from "../indexer/chain/deployment-block.ts";
import { isPrunedState } from "../indexer/chain/pruned-state.ts";
import { type Config, ConfigError } from "../lib/config.ts";
import { checkRpc, Misconfigured, nodeFailure } from "../lib/connection-checks.ts";
import { readDeploymentFile } from "../lib/devnet-file.ts";
import { describeCause, safeUrl } from "../lib/error-cause.ts";

export interface ChainSettings {
  rpcUrl: string;
  /** New heads are subscribed to here when set (RPC_WS_URL; a devnet's anvil serves both). */
  wsUrl?: string;
  staker: Address;
  chainId?: number;
  /** Where indexing starts on a fresh database. */
  startBlock: () => Promise<bigint>;
  /** Where the node and the staker came from, for messages: "RPC_URL" or the devnet file. */
  rpcSource: string;
  stakerSource: string;
}

/**
 * Where to index from, by preset. mainnet: RPC_URL is required and everything but the staker
 * is read from the chain. devnet: unless RPC_URL and STAKER_ADDRESS are given, the devnet the
 * `devnet`/`demo` command started describes itself in DEVNET_FILE.
 */
export async function resolveChainSettings(config: Config): Promise<ChainSettings> {
  const chain = config.chain;
  if (chain.preset === "mainnet") {
    if (!chain.rpcUrl)
      throw new ConfigError("RPC_URL is required with PRESET=mainnet (an archive node)");
    const rpcUrl = chain.rpcUrl;
    const staker = chain.stakerAddress!;
    return {
      rpcUrl,
      wsUrl: chain.wsUrl,
      staker,
      rpcSource: "RPC_URL",
      stakerSource: "STAKER_ADDRESS",
      chainId: chain.chainId ?? 1,
      startBlock: async () =>
        chain.startBlock ?? (await findDeploymentBlock(createChainClient(rpcUrl), staker)),
    };
  }
  if (chain.rpcUrl && chain.stakerAddress) {
    const { rpcUrl, stakerAddress } = chain;
    return {
      rpcUrl,
      wsUrl: chain.wsUrl,
      staker: stakerAddress,
      rpcSource: "RPC_URL",
      stakerSource: "STAKER_ADDRESS",
      chainId: chain.chainId,
      startBlock: async () =>
        chain.startBlock ?? (await findDeploymentBlock(createChainClient(rpcUrl), stakerAddress)),
    };
  }
  if (!existsSync(chain.devnetFile)) {
    throw new ConfigError(
      `no devnet description at ${chain.devnetFile} (DEVNET_FILE): start one with \`bun run devnet\`, or set RPC_URL and STAKER_ADDRESS`,
    );
  }
  const deployment = await readDeploymentFile(chain.devnetFile);
  const fromFile = `the devnet file ${chain.devnetFile} (DEVNET_FILE)`;
  const rpcUrl = chain.rpcUrl ?? deployment.rpcUrl;
  return {
    rpcUrl,
    // anvil answers WebSocket on its HTTP port.
    wsUrl: chain.wsUrl ?? (chain.rpcUrl ? undefined : rpcUrl.replace(/^http/, "ws")),
    rpcSource: chain.rpcUrl ? "RPC_URL" : `the rpcUrl in ${fromFile}`,
    stakerSource: `the staker in ${fromFile}`,
    staker: deployment.addresses.staker,
    chainId: chain.chainId ?? deployment.chainId,
    startBlock: async () => chain.startBlock ?? deployment.deployBlock,
  };
}

/**
 * Fails fast, naming the setting, when the node does not answer, serves another chain, or has
 * no staker at the address: otherwise the first read fails later as "returned no data". Only a
 * definite answer is Misconfigured (exit 2): another chain id, no code at the address, a
 * S1_CITIZEN() that reverts or returns nothing. A read that fails on the way (a reset, a timeout,
 * a 5xx, a 429) is Unreachable, which `follow` and `worker` wait out.
 */
export async function checkChainSettings(settings: ChainSettings): Promise<number> {
  const chainId = await checkRpc(settings.rpcUrl, { source: settings.rpcSource });
  if (settings.chainId !== undefined && settings.chainId !== chainId) {
    throw new Misconfigured(
      `CHAIN_ID (or the preset) says chain ${settings.chainId} but ${settings.rpcSource} serves chain ${chainId}`,
    );
  }
  const client = createChainClient(settings.rpcUrl, { retryCount: 0, timeoutMs: 5_000 });
  const where = `${settings.stakerSource} (${settings.staker})`;
  const node = `${settings.rpcSource} (${safeUrl(settings.rpcUrl)})`;
  const code = await client.getCode({ address: settings.staker }).catch((error: unknown) => {
    throw nodeFailure(`${node} eth_getCode of ${where}`, error);
  });
  if (code === undefined || code === "0x") {
    throw new Misconfigured(`${where}: no contract at this address on chain ${chainId}`);
  }
  try {
    await client.readContract({
      address: settings.staker,
      abi: stakerAbi,
      functionName: "S1_CITIZEN",
    });
  } catch (error) {
    const failure = classifyCallFailure(error, stakerAbi);
    if (!failure.reverted) throw nodeFailure(`${node} S1_CITIZEN() of ${where}`, error);
    throw new Misconfigured(
      `${where}: not a NeoTokyoStaker on chain ${chainId} (S1_CITIZEN() refused: ${failure.reason})`,
    );
  }
  await checkArchiveState(client, settings);
  return chainId;
}

/**
 * A full node answers reads at the head and fails them a few minutes into the past, so an
 * indexer on one would start, then fail its first chunk's reads. This reads the staker at the
 * start block (as the first chunk will) and names a node without that state at once.
 */
async function checkArchiveState(client: PublicClient, settings: ChainSettings): Promise<void> {
  const why =
    "an archive node is needed because the indexer reads the staker's views at the block of every stake, all the way back to the start block";
  let startBlock: bigint;
  const node = `${settings.rpcSource} (${safeUrl(settings.rpcUrl)})`;
  try {
    startBlock = await settings.startBlock();
  } catch (error) {
    if (!isPrunedState(error))
      throw nodeFailure(`${node} finding the staker's deployment block`, error);
    throw new Misconfigured(
      `${settings.rpcSource} does not serve state at old blocks (finding the staker's deployment block failed): ${why}; set START_BLOCK or use an archive node (${describeCause(error)})`,
    );
  }
  try {
    await client.readContract({
      address: settings.staker,
      abi: stakerAbi,
      functionName: "S1_CITIZEN",
      blockNumber: startBlock,
    });
  } catch (error) {
    if (!isPrunedState(error))
      throw nodeFailure(`${node} S1_CITIZEN() at block ${startBlock}`, error);
    throw new Misconfigured(
      `${settings.rpcSource} does not serve state at block ${startBlock}: ${why} (the node said: ${describeCause(error)})`,
    );
  }
}
