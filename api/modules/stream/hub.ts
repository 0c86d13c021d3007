/**
 * This instance's fan-out. Every instance LISTENs for the indexed block moving (api/connections.ts)
 * and then re-reads, once per wallet that has open streams, that wallet's rows; each stream of the
 * wallet works out its own differences. Nothing is shared between instances but Postgres, so any
 * number of them behind a load balancer each serve their own streams.
 *
 * Reads of one wallet run one after another (a move during a read queues one more read), so a
 * stream sees the wallet's states in commit order.
 */
import type { Logger } from "pino";
import type { StreamService, WalletState } from "./service.ts";

export interface Subscriber {
  /** Lowercase. */
  wallet: string;
  /**
   * Called with each fresh read of the wallet, in order. A throw (a read of its own that failed)
   * makes the hub read the wallet again a second later.
   */
  deliver(state: WalletState): Promise<void>;
}

interface Wallet {
  subscribers: Set<Subscriber>;
  reading: boolean;
  again: boolean;
}

/** After a failed read (Postgres away), the wallet is read again this much later. */
const RETRY_MS = 1_000;

export function createHub({ service, log }: { service: StreamService; log: Logger }) {
  const wallets = new Map<string, Wallet>();

  async function read(address: string) {
    const wallet = wallets.get(address);
    if (!wallet) return;
    if (wallet.reading) {
      wallet.again = true;
      return;
    }
    wallet.reading = true;
    let failed = false;
    do {
      wallet.again = false;
      const warn = (error: unknown) => {
        failed = true;
        log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "stream read failed",
        );
      };
      try {
        const state = await service.now(address);
        for (const subscriber of [...wallet.subscribers]) {
          await subscriber.deliver(state).catch(warn);
        }
      } catch (error) {
        warn(error);
      }
    } while (wallet.again && !failed && wallet.subscribers.size > 0);
    wallet.reading = false;
    if (failed) setTimeout(() => void read(address), RETRY_MS).unref();
  }

  return {
    /** Adds a stream and reads its wallet at once (its first delivery is its starting state). */
    subscribe(subscriber: Subscriber) {
      let wallet = wallets.get(subscriber.wallet);
      if (!wallet) {
        wallet = { subscribers: new Set(), reading: false, again: false };
        wallets.set(subscriber.wallet, wallet);
      }
      wallet.subscribers.add(subscriber);
      void read(subscriber.wallet);
    },
    unsubscribe(subscriber: Subscriber) {
      const wallet = wallets.get(subscriber.wallet);
      if (!wallet) return;
      wallet.subscribers.delete(subscriber);
      if (wallet.subscribers.size === 0) wallets.delete(subscriber.wallet);
    },
    /** The indexed block moved (or staked_citizens was rewritten): read every watched wallet. */
    moved() {
      for (const address of wallets.keys()) void read(address);
    },
  };
}

export type Hub = ReturnType<typeof createHub>;
