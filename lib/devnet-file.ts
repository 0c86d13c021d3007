/**
 * The devnet description file (DEVNET_FILE): the contracts a devnet deployed and the node that
 * serves them. Written by the devnet command, read by the indexer and the API on the devnet
 * preset, which is why it lives here and not with the deployment code in devnet/.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { type Address, getAddress, isAddress } from "viem";

export type DevnetAddresses = {
  staker: Address;
  bytes: Address;
  s1Citizen: Address;
  s2Citizen: Address;
  vault: Address;
  identity: Address;
  lp: Address;
};

export type DevnetDeployment = {
  chainId: number;
  rpcUrl: string;
  /** The block holding the staker's creation; nothing before it can hold a staker event. */
  deployBlock: bigint;
  deployer: Address;
  treasury: Address;
  addresses: DevnetAddresses;
};

export class DeploymentFileInvalid extends Error {
  override name = "DeploymentFileInvalid";
}

export async function writeDeploymentFile(
  path: string,
  deployment: DevnetDeployment,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const json = { ...deployment, deployBlock: Number(deployment.deployBlock) };
  await writeFile(path, `${JSON.stringify(json, null, 2)}\n`);
}

export async function readDeploymentFile(path: string): Promise<DevnetDeployment> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new DeploymentFileInvalid(
      `cannot read deployment file ${path}: ${(error as Error).message}`,
    );
  }
  const record = parsed as Record<string, unknown>;
  const field = <T>(name: string, ok: (value: unknown) => value is T, value = record[name]): T => {
    if (!ok(value)) throw new DeploymentFileInvalid(`${path}: "${name}" is missing or malformed`);
    return value;
  };
  const isInteger = (value: unknown): value is number => Number.isSafeInteger(value);
  const isText = (value: unknown): value is string => typeof value === "string" && value !== "";
  const isAddressText = (value: unknown): value is Address =>
    typeof value === "string" && isAddress(value, { strict: false });
  const lower = (address: Address) => getAddress(address).toLowerCase() as Address;
  const addresses = field(
    "addresses",
    (value): value is Record<string, unknown> => value !== null && typeof value === "object",
  );
  const contract = (name: keyof DevnetAddresses) =>
    lower(field(`addresses.${name}`, isAddressText, addresses[name]));
  return {
    chainId: field("chainId", isInteger),
    rpcUrl: field("rpcUrl", isText),
    deployBlock: BigInt(field("deployBlock", isInteger)),
    deployer: lower(field("deployer", isAddressText)),
    treasury: lower(field("treasury", isAddressText)),
    addresses: {
      staker: contract("staker"),
      bytes: contract("bytes"),
      s1Citizen: contract("s1Citizen"),
      s2Citizen: contract("s2Citizen"),
      vault: contract("vault"),
      identity: contract("identity"),
      lp: contract("lp"),
    },
  };
}
