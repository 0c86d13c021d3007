import { existsSync } from "node:fs";
import type { Address } from "viem";
import { readDeploymentFile } from "../devnet/deploy.ts";
import { type Config, ConfigError } from "../lib/config.ts";
import { createChainClient } from "./chain/client.ts";
import { findDeploymentBlock } from "./chain/deployment-block.ts";

export interface ChainSettings {
  rpcUrl: string;
  staker: Address;
  chainId?: number;
  /** Where indexing starts on a fresh database. */
  startBlock: () => Promise<bigint>;
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
      staker,
      chainId: chain.chainId ?? 1,
      startBlock: async () =>
        chain.startBlock ?? (await findDeploymentBlock(createChainClient(rpcUrl), staker)),
    };
  }
  if (chain.rpcUrl && chain.stakerAddress) {
    const { rpcUrl, stakerAddress } = chain;
    return {
      rpcUrl,
      staker: stakerAddress,
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
  return {
    rpcUrl: chain.rpcUrl ?? deployment.rpcUrl,
    staker: deployment.addresses.staker,
    chainId: chain.chainId ?? deployment.chainId,
    startBlock: async () => chain.startBlock ?? deployment.deployBlock,
  };
}
