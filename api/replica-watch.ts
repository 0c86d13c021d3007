/**
 * Follows what a hot standby has replayed. A standby refuses LISTEN, and the primary's NOTIFY
 * only says that the primary moved: the standby replays that commit a little later (or, paused
 * or cut off, much later), so a re-read on the notification finds the old block and the move is
 * missed until the next one. Instead each API instance asks the standby for its data version
 * (indexed-block.ts) every POLL_MS and calls back when it differs: a move reaches the response
 * cache and the live streams at most POLL_MS after the standby replayed it, never before.
 *
 * The cost is one statement over indexer_checkpoints (a row per staker) per POLL_MS per
 * instance, whatever the traffic; requests pay nothing.
 */
import type { Database } from "../db/client.ts";
import { indexedBlockSource } from "./indexed-block.ts";

export const POLL_MS = 100;

export function watchReplayedVersion(db: Database, everyMs = POLL_MS) {
  const checkpoint = indexedBlockSource(db);
  const version = db
    .with(checkpoint)
    .select({ version: checkpoint.version })
    .from(checkpoint)
    .prepare("replayed_version");
  const listeners: (() => void)[] = [];
  // Undefined until the first answer, and again after a failed one: the next answer counts as a
  // move, as a LISTEN that reconnects does (what happened meanwhile is unknown).
  let last: string | undefined;
  let polling = false;
  let timer: ReturnType<typeof setInterval> | undefined;

  async function poll() {
    if (polling) return;
    polling = true;
    try {
      const [row] = await version.execute();
      const now = row?.version ?? "";
      if (now !== last) {
        last = now;
        for (const onMove of listeners) onMove();
      }
    } catch {
      // The standby is away: requests answer 503 meanwhile, and /readyz says why.
      last = undefined;
    } finally {
      polling = false;
    }
  }

  return {
    /** Calls back whenever the standby's data version changes (and once at the first answer). */
    watch(onMove: () => void) {
      listeners.push(onMove);
      if (timer !== undefined) return;
      timer = setInterval(() => void poll(), everyMs);
      timer.unref();
      void poll();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
