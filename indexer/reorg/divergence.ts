import type { Logger } from "pino";
import type { PublicClient } from "viem";
import { NodeBehind } from "../chain/node-behind.ts";
import type { IndexerStore, LinkConflict } from "../store/index.ts";
import { findForkPoint, hashOnChain } from "./fork-point.ts";

/** A fetched range no longer matches the chain; its job fetches it again. */
export class RangeStale extends Error {
  override name = "RangeStale";
}

interface Deps {
  client: PublicClient;
  store: IndexerStore;
  log: Logger;
}

/**
 * Rolls the tables back to where the indexed history rejoins the chain, when the checkpoint's
 * block left it. Returns null when it did not; throws ReorgTooDeep below the finality boundary.
 */
export async function rollBackOrphans(deps: Deps, finalized: bigint) {
  const current = await deps.store.checkpoint();
  if (!current) return null;
  const forkPoint = await findForkPoint(deps.client, deps.store, current.indexedBlock, finalized);
  if (forkPoint === null) return null;
  const { removedEvents } = await deps.store.rollbackTo(forkPoint);
  deps.log.warn(
    {
      indexedBlock: current.indexedBlock.toString(),
      forkPoint: forkPoint.toString(),
      removedEvents,
    },
    "reorg: rolled back to the fork point",
  );
  return { forkPoint, removedEvents };
}

/**
 * A write claimed a hash that differs from a stored one. The chain says which side is stale:
 * stored rows from an orphaned branch are removed (rolled back below the checkpoint, or
 * dropped and re-queued above it), and the write itself is always fetched again, since either
 * it is stale or it was checked against stale neighbours. A node without the block says
 * neither (NodeBehind): nothing stored is touched, and the write waits.
 */
export async function resolveLinkConflict(
  deps: Deps,
  conflict: LinkConflict,
  finalized: bigint,
): Promise<never> {
  const canonical = await hashOnChain(deps.client, conflict.block);
  if (canonical === undefined) throw new NodeBehind(conflict.block, undefined, { cause: conflict });
  if (canonical !== conflict.stored) {
    const current = (await deps.store.checkpoint())!;
    if (conflict.block <= current.indexedBlock) {
      await rollBackOrphans(deps, finalized);
    } else {
      // Written but not yet under the checkpoint, so never served: dropping every such range
      // is simplest, and the lost-work check queues them again.
      await deps.store.rollbackTo(current.indexedBlock);
      deps.log.warn(
        { block: conflict.block.toString(), indexedBlock: current.indexedBlock.toString() },
        "reorg: dropped ranges written from an orphaned branch",
      );
    }
  }
  throw new RangeStale(`${conflict.message}; fetching the range again`);
}
