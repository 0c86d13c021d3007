/**
 * Sends many transactions into one block and mines it: automine is off, every sender's nonce is
 * tracked here (so a block's transactions go out as one JSON-RPC batch without a nonce lookup
 * each), and the block's receipts are checked in one call after it is mined.
 */
import { type Address, type Hex, hexToBigInt, numberToHex } from "viem";
import type { DevnetClient } from "./client.ts";

export type PlannedTransaction = {
  from: Address;
  to: Address;
  data: Hex;
  gas: bigint;
  /** What the transaction does, for the error when it reverts. */
  label: string;
};

type RawReceipt = {
  transactionHash: Hex;
  status: Hex;
  logs: { address: Address }[];
};

export type MinedBlock = {
  number: bigint;
  timestamp: bigint;
  transactions: number;
  /** Logs emitted by the watched contract in this block. */
  watchedLogs: number;
};

export class ScenarioTransactionReverted extends Error {
  override name = "ScenarioTransactionReverted";
}

export class BlockBuilder {
  private readonly nonces = new Map<Address, number>();
  private pending: PlannedTransaction[] = [];

  constructor(
    private readonly client: DevnetClient,
    /** Logs from this address are counted per block (the staker's events). */
    private readonly watched: Address,
  ) {}

  /** Turns automine off so each `mine` call decides what goes into a block. */
  async start(): Promise<void> {
    await this.client.setAutomine(false);
  }

  add(transaction: PlannedTransaction): void {
    this.pending.push(transaction);
  }

  get size(): number {
    return this.pending.length;
  }

  private async nextNonce(address: Address): Promise<number> {
    let nonce = this.nonces.get(address);
    if (nonce === undefined) {
      nonce = await this.client.getTransactionCount({ address, blockTag: "pending" });
    }
    this.nonces.set(address, nonce + 1);
    return nonce;
  }

  /** Sends what was added, mines one block at `timestamp`, and fails if anything reverted. */
  async mine(timestamp: bigint): Promise<MinedBlock> {
    const batch = this.pending;
    this.pending = [];
    const labels = new Map<Hex, string>();
    // Nonces are taken in order before anything is sent, so the batch may go out in any order.
    const withNonces: { transaction: PlannedTransaction; nonce: number }[] = [];
    for (const transaction of batch) {
      withNonces.push({ transaction, nonce: await this.nextNonce(transaction.from) });
    }
    const hashes = await Promise.all(
      withNonces.map(({ transaction, nonce }) =>
        this.client.request<{
          Method: "eth_sendTransaction";
          Parameters: [{ from: Address; to: Address; data: Hex; gas: Hex; nonce: Hex }];
          ReturnType: Hex;
        }>({
          method: "eth_sendTransaction",
          params: [
            {
              from: transaction.from,
              to: transaction.to,
              data: transaction.data,
              gas: numberToHex(transaction.gas),
              nonce: numberToHex(nonce),
            },
          ],
        }),
      ),
    );
    hashes.forEach((hash, index) => {
      labels.set(hash, withNonces[index]?.transaction.label ?? "unknown");
    });

    await this.client.setNextBlockTimestamp({ timestamp });
    await this.client.mine({ blocks: 1 });
    const block = await this.client.getBlock({ blockTag: "latest" });
    if (block.transactions.length !== batch.length) {
      throw new ScenarioTransactionReverted(
        `block ${block.number} holds ${block.transactions.length} of ${batch.length} transactions sent; ` +
          "raise the devnet block gas limit or send fewer per block",
      );
    }
    const receipts = await this.client.request<{
      Method: "eth_getBlockReceipts";
      Parameters: [Hex];
      ReturnType: RawReceipt[];
    }>({ method: "eth_getBlockReceipts", params: [numberToHex(block.number)] });
    let watchedLogs = 0;
    for (const receipt of receipts) {
      if (hexToBigInt(receipt.status) !== 1n) {
        throw new ScenarioTransactionReverted(
          `${labels.get(receipt.transactionHash) ?? "a transaction"} reverted in block ${block.number} ` +
            `(${receipt.transactionHash})`,
        );
      }
      for (const log of receipt.logs) {
        if (log.address.toLowerCase() === this.watched) watchedLogs++;
      }
    }
    return {
      number: block.number,
      timestamp: block.timestamp,
      transactions: batch.length,
      watchedLogs,
    };
  }
}
