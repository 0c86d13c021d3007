/**
 * The scenario's first blocks, planned: the deployer mints each wallet's S1 and S2 citizens,
 * vaults, BYTES and LP and writes the identity classes, and each wallet approves the staker. No
 * staker events; the wallets and citizens it mints are recorded in the holdings.
 */
import { type Address, encodeFunctionData } from "viem";
import {
  bytesTokenAbi,
  identityAbi,
  lpTokenAbi,
  s1CitizenAbi,
  s2CitizenAbi,
  vaultAbi,
} from "../contracts/generated/index.ts";
import type { PlannedTransaction } from "./block-builder.ts";
import type { DevnetDeployment } from "./deploy.ts";
import type { SeededRandom } from "./random.ts";
import { type ScenarioHoldings, type Wallet, walletAddress } from "./scenario-holdings.ts";
import {
  BYTES_UNIT,
  citizenRewardRate,
  HAND_CLASS,
  VAULT_TIERS,
  type VaultTier,
} from "./settings.ts";
import { approvalTransactions, TOKEN_CALL_GAS } from "./staking-calls.ts";

export const LP_PER_WALLET = 10_000n * BYTES_UNIT;
const CLASS_ROWS_PER_TRANSACTION = 100;
const CLASS_NAMES = ["Assassin", "Hacker", "Engineer", "Samurai", "Ronin", "Cyborg"] as const;

export type SetupPlan = {
  seed: string;
  random: SeededRandom;
  deployment: Pick<DevnetDeployment, "addresses" | "deployer">;
  walletCount: number;
  lpPerWallet: bigint;
};

/** The setup transactions in the order they must be mined; adds the wallets to `holdings`. */
export function planSetup(plan: SetupPlan, holdings: ScenarioHoldings): PlannedTransaction[] {
  const { addresses, deployer } = plan.deployment;
  const { random, lpPerWallet } = plan;
  const setup: PlannedTransaction[] = [];
  const fromDeployer = (to: Address, data: `0x${string}`, label: string) =>
    setup.push({ from: deployer, to, data, gas: TOKEN_CALL_GAS, label });
  let nextS1 = 1n;
  let nextS2 = 1n;
  let nextVault = 1n;
  const hands: bigint[] = [];
  const classes: { id: bigint; name: string }[] = [];
  const mintVault = (to: Address, tier: VaultTier) => {
    const id = nextVault++;
    fromDeployer(
      addresses.vault,
      encodeFunctionData({ abi: vaultAbi, functionName: "mint", args: [to, id, tier] }),
      `mint vault ${id}`,
    );
    return id;
  };

  for (let index = 0; index < plan.walletCount; index++) {
    const address = walletAddress(plan.seed, index);
    const wallet: Wallet = {
      address,
      looseVaults: [],
      lpHeld: lpPerWallet,
      lp: { amount: 0n, optionId: 0, endTime: 0n },
    };
    holdings.addWallet(wallet);

    for (let n = random.int(1, 6); n > 0; n--) {
      const id = nextS1++;
      const identity = random.weighted({ Low: 40, Mid: 30, High: 20, Hand: 10 });
      const tier: VaultTier | "" = random.chance(0.35) ? random.pick(VAULT_TIERS) : "";
      const componentVault = tier === "" ? 0n : mintVault(deployer, tier);
      // A few citizens carry a rate the credit-yield table does not map: they stake with "" and 0.
      const rate =
        tier === "" && identity === "Low" && random.chance(0.08)
          ? 4n
          : citizenRewardRate(identity, tier);
      if (identity === "Hand") hands.push(id);
      else classes.push({ id, name: random.pick(CLASS_NAMES) });
      fromDeployer(
        addresses.s1Citizen,
        encodeFunctionData({
          abi: s1CitizenAbi,
          functionName: "mint",
          args: [
            address,
            id,
            id,
            componentVault,
            BigInt(random.int(1, 3000)),
            BigInt(random.int(1, 3000)),
            rate,
          ],
        }),
        `mint S1 citizen ${id}`,
      );
      holdings.addS1({ id, owner: address, identity, componentVault, usableFromBlock: 0 });
    }
    for (let n = random.int(0, 3); n > 0; n--) {
      const id = nextS2++;
      fromDeployer(
        addresses.s2Citizen,
        encodeFunctionData({
          abi: s2CitizenAbi,
          functionName: "mint",
          args: [
            address,
            id,
            100_000n + id,
            BigInt(random.int(1, 3000)),
            BigInt(random.int(1, 3000)),
          ],
        }),
        `mint S2 citizen ${id}`,
      );
      holdings.addS2({ id, owner: address, usableFromBlock: 0 });
    }
    for (let n = random.int(0, 2); n > 0; n--) {
      wallet.looseVaults.push(mintVault(address, random.pick(VAULT_TIERS)));
    }
    fromDeployer(
      addresses.bytes,
      encodeFunctionData({
        abi: bytesTokenAbi,
        functionName: "mint",
        args: [address, 1_000_000n * BYTES_UNIT],
      }),
      `mint BYTES to ${address}`,
    );
    fromDeployer(
      addresses.lp,
      encodeFunctionData({
        abi: lpTokenAbi,
        functionName: "mint",
        args: [address, lpPerWallet],
      }),
      `mint LP to ${address}`,
    );
    for (const approval of approvalTransactions(addresses, address)) {
      setup.push({ ...approval, gas: TOKEN_CALL_GAS });
    }
  }
  const classRows = [...hands.map((id) => ({ id, name: HAND_CLASS })), ...classes];
  // Small enough that a setup batch stays under anvil's 2 MiB request limit.
  for (let start = 0; start < classRows.length; start += CLASS_ROWS_PER_TRANSACTION) {
    const rows = classRows.slice(start, start + CLASS_ROWS_PER_TRANSACTION);
    setup.push({
      from: deployer,
      to: addresses.identity,
      data: encodeFunctionData({
        abi: identityAbi,
        functionName: "setClasses",
        args: [rows.map((row) => row.id), rows.map((row) => row.name)],
      }),
      gas: 30_000_000n,
      label: "set identity classes",
    });
  }
  return setup;
}
