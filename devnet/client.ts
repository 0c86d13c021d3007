/**
 * One viem client for the devnet with public, wallet and anvil test actions. Requests made in the
 * same tick go out as one JSON-RPC batch, which is what lets the scenario send thousands of
 * transactions per block quickly.
 */
import { createTestClient, http, publicActions, walletActions } from "viem";
import { foundry } from "viem/chains";

export function createDevnetClient(rpcUrl: string) {
  return createTestClient({
    chain: foundry,
    mode: "anvil",
    // Anvil answers in microseconds; viem's default 4 s polling would dominate every wait.
    pollingInterval: 20,
    // A block number read right after a mine must be the new one, not one cached while polling.
    cacheTime: 0,
    transport: http(rpcUrl, {
      batch: { batchSize: 1_000, wait: 0 },
      // Retrying a send could submit a transaction twice; the node is local, so failures are real.
      retryCount: 0,
      timeout: 120_000,
    }),
  })
    .extend(publicActions)
    .extend(walletActions);
}

export type DevnetClient = ReturnType<typeof createDevnetClient>;

/** Where a caller may hand over either an RPC URL or a client it already made. */
export type DevnetConnection = string | DevnetClient;

export function devnetClient(connection: DevnetConnection): DevnetClient {
  return typeof connection === "string" ? createDevnetClient(connection) : connection;
}

export function rpcUrlOf(connection: DevnetConnection): string {
  if (typeof connection === "string") return connection;
  const url = connection.transport.url;
  if (!url) throw new Error("devnet client has no RPC URL");
  return url;
}
