import {
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  pad,
  type StateOverride,
} from "viem";
import { isMethodUnavailable } from "./hand-trace.ts";

/**
 * A stake's configuration as the stake itself read it, when its block's owner changed it both
 * before and after the stake (no event marks either): neither end of the block shows it. The
 * node's prestateTracer replays the stake's transaction and gives every storage slot it touched
 * as it stood just before the transaction; the staker's views read at the block before, with
 * those slots put back (an eth_call state override), then give the figures the stake saw,
 * whatever the staker's storage layout. It is one of geth's built-in tracers, which erigon,
 * reth and anvil serve as well; hosted providers serve it where they open debug_ (often on
 * paid plans only), and a node without it is asked again only after a while.
 */

/** The node does not serve debug_traceTransaction with the prestateTracer. */
export class PrestateUnavailable extends Error {
  override name = "PrestateUnavailable";
}

/** When each client's node was found to have no prestate tracer: asked again after a while. */
const unavailableSince = new WeakMap<PublicClient, number>();
const RECHECK_UNAVAILABLE_MS = 10 * 60_000;

/** prestateTracer's answer (not diff mode): each touched account before the transaction. */
type Prestate = Record<Address, { storage?: Record<Hex, Hex> }>;

/**
 * The storage slots the transaction touched, as they stood before it ran, as a state override
 * (slots and values as 32-byte words: some nodes leave leading zeros out).
 */
export async function readPrestate(
  client: PublicClient,
  transactionHash: Hash,
): Promise<StateOverride> {
  const since = unavailableSince.get(client);
  if (since !== undefined && Date.now() - since < RECHECK_UNAVAILABLE_MS) {
    throw prestateUnavailable(transactionHash);
  }
  let prestate: Prestate;
  try {
    prestate = await client.request<{
      Parameters: [Hash, { tracer: "prestateTracer" }];
      ReturnType: Prestate;
    }>({
      method: "debug_traceTransaction",
      params: [transactionHash, { tracer: "prestateTracer" }],
    });
  } catch (error) {
    if (!isMethodUnavailable(error)) throw error;
    unavailableSince.set(client, Date.now());
    throw prestateUnavailable(transactionHash);
  }
  unavailableSince.delete(client);
  return Object.entries(prestate).flatMap(([address, account]) => {
    const slots = Object.entries(account.storage ?? {});
    if (slots.length === 0) return [];
    return [
      {
        address: address as Address,
        stateDiff: slots.map(([slot, value]) => ({
          slot: pad(slot as Hex, { size: 32 }),
          value: pad(value, { size: 32 }),
        })),
      },
    ];
  });
}

function prestateUnavailable(transactionHash: Hash): PrestateUnavailable {
  return new PrestateUnavailable(
    `the node answers no debug_traceTransaction with the prestateTracer, so the configuration ` +
      `${transactionHash} staked with cannot be replayed`,
  );
}
