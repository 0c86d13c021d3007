/**
 * Hand-made staking transactions for tests that need a precise story (a stake in this block, a
 * withdraw in that one) on top of a scenario. Transactions are plain JSON requests so they can go
 * to eth_sendTransaction or into anvil_reorg's replacement blocks alike.
 */
import { type Address, encodeFunctionData, type Hex, numberToHex, parseEther } from "viem";
import { bytesTokenAbi, s1CitizenAbi, s2CitizenAbi } from "../../contracts/generated/index.ts";
import type { DevnetClient } from "../../devnet/client.ts";
import type { DevnetDeployment } from "../../devnet/deploy.ts";
import { citizenRewardRate, STAKER_ASSET_ID } from "../../devnet/settings.ts";
import {
  approvalTransactions,
  citizenAssetType,
  stakeCalldata,
  withdrawCalldata,
} from "../../devnet/staking-calls.ts";

export type TransactionJson = { from: Address; to: Address; data: Hex; gas: Hex };

const GAS = numberToHex(1_500_000n);

export function stakingActions(client: DevnetClient, deployment: DevnetDeployment) {
  const { addresses, deployer } = deployment;
  const tx = (from: Address, to: Address, data: Hex): TransactionJson => ({
    from,
    to,
    data,
    gas: GAS,
  });

  /** Sends the transactions in order and mines them into one block; returns its number. */
  async function mine(transactions: TransactionJson[]): Promise<bigint> {
    for (const transaction of transactions) {
      await client.request({ method: "eth_sendTransaction", params: [transaction] } as never);
    }
    await client.mine({ blocks: 1 });
    const block = await client.getBlock({ blockTag: "latest" });
    for (const hash of block.transactions) {
      const receipt = await client.getTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error(`test transaction ${hash} reverted`);
    }
    return block.number;
  }

  return {
    mine,

    /** A wallet with ETH, BYTES, and the staker approved for its citizens and BYTES. */
    async wallet(address: Address) {
      await client.setBalance({ address, value: parseEther("100") });
      await mine([
        tx(
          deployer,
          addresses.bytes,
          encodeFunctionData({
            abi: bytesTokenAbi,
            functionName: "mint",
            args: [address, parseEther("100000")],
          }),
        ),
        ...approvalTransactions(addresses, address).map(({ from, to, data }) => tx(from, to, data)),
      ]);
      return address;
    },

    mintS1(owner: Address, id: bigint) {
      return tx(
        deployer,
        addresses.s1Citizen,
        encodeFunctionData({
          abi: s1CitizenAbi,
          functionName: "mint",
          args: [owner, id, id, 0n, 1n, 1n, citizenRewardRate("Mid", "")],
        }),
      );
    },

    mintS2(owner: Address, id: bigint) {
      return tx(
        deployer,
        addresses.s2Citizen,
        encodeFunctionData({
          abi: s2CitizenAbi,
          functionName: "mint",
          args: [owner, id, id, 1n, 1n],
        }),
      );
    },

    stake(owner: Address, season: 1 | 2, id: bigint, optionId = 0) {
      return tx(owner, addresses.staker, stakeCalldata(citizenAssetType(season), optionId, id));
    },

    stakeBytes(owner: Address, season: 1 | 2, id: bigint, amount: bigint) {
      return tx(
        owner,
        addresses.staker,
        stakeCalldata(STAKER_ASSET_ID.bytes, 0, amount, id, BigInt(season)),
      );
    },

    withdraw(owner: Address, season: 1 | 2, id: bigint) {
      return tx(owner, addresses.staker, withdrawCalldata(citizenAssetType(season), id));
    },

    /** Makes a citizen's tokenURI misbehave (contracts/src/CitizenMetadata.sol; 0 mends it). */
    setMetadataFault(season: 1 | 2, id: bigint, fault: number) {
      return tx(
        deployer,
        season === 1 ? addresses.s1Citizen : addresses.s2Citizen,
        encodeFunctionData({
          abi: s1CitizenAbi,
          functionName: "setMetadataFault",
          args: [id, fault],
        }),
      );
    },

    /** anvil_rollback: removes the last `depth` blocks; the chain's head is their parent again. */
    async rollback(depth: number) {
      await client.request({ method: "anvil_rollback", params: [depth] } as never);
    },

    /** anvil_reorg: replaces the last `depth` blocks; each transaction goes into the block at its offset. */
    async reorg(depth: number, replacements: [TransactionJson, number][] = []) {
      await client.request({ method: "anvil_reorg", params: [depth, replacements] } as never);
    },
  };
}
