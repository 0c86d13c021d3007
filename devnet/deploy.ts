/**
 * Deploys the staker and its token contracts to a devnet, configures them like mainnet, and
 * records where they live in a JSON file the indexer reads.
 */
import { type Address, type Hash, keccak256, parseEther, slice, stringToHex } from "viem";
import {
  bytesTokenAbi,
  bytesTokenBytecode,
  identityAbi,
  identityBytecode,
  lpTokenAbi,
  lpTokenBytecode,
  neoTokyoStakerAbi,
  neoTokyoStakerBytecode,
  s1CitizenAbi,
  s1CitizenBytecode,
  s2CitizenAbi,
  s2CitizenBytecode,
  vaultAbi,
  vaultBytecode,
} from "../contracts/generated/index.ts";
import type { DevnetDeployment } from "../lib/devnet-file.ts";
import { type DevnetConnection, devnetClient, rpcUrlOf } from "./client.ts";
import {
  DAY,
  encodeTimelockOption,
  IDENTITY_CREDIT_POINTS,
  identityCreditYieldTable,
  NO_VAULT_CAP,
  poolConfiguration,
  STAKER_ASSET_ID,
  TIMELOCK_OPTIONS,
  VAULT_CAP,
  VAULT_CREDIT_MULTIPLIERS,
} from "./settings.ts";

export {
  DeploymentFileInvalid,
  type DevnetAddresses,
  type DevnetDeployment,
  readDeploymentFile,
  writeDeploymentFile,
} from "../lib/devnet-file.ts";

/** Anvil's first dev account: deploys, owns and mints every devnet contract. */
export const DEVNET_DEPLOYER: Address = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
/** Where BYTES mints the DAO tax; an address no one holds a key for. */
export const DEVNET_TREASURY: Address = slice(
  keccak256(stringToHex("citizen-staking devnet treasury")),
  12,
);

export type DeployOptions = { deployer?: Address; treasury?: Address };

export class DevnetDeploymentFailed extends Error {
  override name = "DevnetDeploymentFailed";
}

export async function deployDevnet(
  connection: DevnetConnection,
  options: DeployOptions = {},
): Promise<DevnetDeployment> {
  const client = devnetClient(connection);
  const deployer = options.deployer ?? DEVNET_DEPLOYER;
  const treasury = options.treasury ?? DEVNET_TREASURY;
  await client.setBalance({ address: deployer, value: parseEther("1000000") });

  const confirm = async (label: string, hash: Hash) => {
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success")
      throw new DevnetDeploymentFailed(`${label} reverted (${hash})`);
    return receipt;
  };
  const created = async (label: string, hash: Hash) => {
    const receipt = await confirm(label, hash);
    if (!receipt.contractAddress) throw new DevnetDeploymentFailed(`${label} created no contract`);
    return {
      address: receipt.contractAddress.toLowerCase() as Address,
      block: receipt.blockNumber,
    };
  };

  const account = deployer;
  const bytes = await created(
    "BytesToken",
    await client.deployContract({
      abi: bytesTokenAbi,
      bytecode: bytesTokenBytecode,
      args: [treasury],
      account,
    }),
  );
  const s1Citizen = await created(
    "S1Citizen",
    await client.deployContract({ abi: s1CitizenAbi, bytecode: s1CitizenBytecode, account }),
  );
  const s2Citizen = await created(
    "S2Citizen",
    await client.deployContract({ abi: s2CitizenAbi, bytecode: s2CitizenBytecode, account }),
  );
  const vault = await created(
    "Vault",
    await client.deployContract({ abi: vaultAbi, bytecode: vaultBytecode, account }),
  );
  const identity = await created(
    "Identity",
    await client.deployContract({ abi: identityAbi, bytecode: identityBytecode, account }),
  );
  const lp = await created(
    "LPToken",
    await client.deployContract({ abi: lpTokenAbi, bytecode: lpTokenBytecode, account }),
  );
  const staker = await created(
    "NeoTokyoStaker",
    await client.deployContract({
      abi: neoTokyoStakerAbi,
      bytecode: neoTokyoStakerBytecode,
      args: [
        bytes.address,
        s1Citizen.address,
        s2Citizen.address,
        lp.address,
        identity.address,
        vault.address,
        VAULT_CAP,
        NO_VAULT_CAP,
      ],
      account,
    }),
  );

  await confirm(
    "BytesToken.setStaker",
    await client.writeContract({
      address: bytes.address,
      abi: bytesTokenAbi,
      functionName: "setStaker",
      args: [staker.address],
      account,
    }),
  );

  for (const assetType of Object.values(STAKER_ASSET_ID)) {
    const options = TIMELOCK_OPTIONS[assetType];
    await confirm(
      `configureTimelockOptions(${assetType})`,
      await client.writeContract({
        address: staker.address,
        abi: neoTokyoStakerAbi,
        functionName: "configureTimelockOptions",
        args: [
          assetType,
          options.map((_, id) => BigInt(id)),
          options.map(([duration, multiplier]) => encodeTimelockOption(duration, multiplier)),
        ],
        account,
      }),
    );
  }

  await confirm(
    "configureIdentityCreditPoints",
    await client.writeContract({
      address: staker.address,
      abi: neoTokyoStakerAbi,
      functionName: "configureIdentityCreditPoints",
      args: [Object.keys(IDENTITY_CREDIT_POINTS), Object.values(IDENTITY_CREDIT_POINTS)],
      account,
    }),
  );
  await confirm(
    "configureVaultCreditMultipliers",
    await client.writeContract({
      address: staker.address,
      abi: neoTokyoStakerAbi,
      functionName: "configureVaultCreditMultipliers",
      args: [Object.keys(VAULT_CREDIT_MULTIPLIERS), Object.values(VAULT_CREDIT_MULTIPLIERS)],
      account,
    }),
  );
  const yields = identityCreditYieldTable();
  await confirm(
    "configureIdentityCreditYields",
    await client.writeContract({
      address: staker.address,
      abi: neoTokyoStakerAbi,
      functionName: "configureIdentityCreditYields",
      args: [
        yields.map((entry) => entry.rate),
        yields.map((entry) => entry.vaultTier),
        yields.map((entry) => entry.creditYield),
      ],
      account,
    }),
  );

  // Pools open a day in the past: a window starting at the current block counts as not started.
  const latest = await client.getBlock();
  const poolStart = latest.timestamp > DAY ? latest.timestamp - DAY : 1n;
  await confirm(
    "configurePools",
    await client.writeContract({
      address: staker.address,
      abi: neoTokyoStakerAbi,
      functionName: "configurePools",
      args: [poolConfiguration(poolStart)],
      account,
    }),
  );

  return {
    chainId: await client.getChainId(),
    rpcUrl: rpcUrlOf(connection),
    deployBlock: staker.block,
    deployer: deployer.toLowerCase() as Address,
    treasury: treasury.toLowerCase() as Address,
    addresses: {
      staker: staker.address,
      bytes: bytes.address,
      s1Citizen: s1Citizen.address,
      s2Citizen: s2Citizen.address,
      vault: vault.address,
      identity: identity.address,
      lp: lp.address,
    },
  };
}

/** JSON with lowercase addresses and the deploy block as a plain number. */
