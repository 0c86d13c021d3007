import { SingleBar } from "cli-progress";
import type { Indexer } from "./indexer.ts";

/** The backfill cannot finish: a chunk job failed with an error no retry fixes. */
export class BackfillStalled extends Error {
  override name = "BackfillStalled";
}

/** How often the progress loop asks whether the remaining work still exists. */
const STALL_CHECK_MS = 2_000;

/**
 * Shows a backfill's progress until the checkpoint reaches `to`: a live bar on a terminal,
 * a line every few seconds otherwise (CI logs, pipes).
 */
export async function showProgress(indexer: Indexer, from: bigint, to: bigint) {
  const started = performance.now();
  const total = Number(to - from + 1n);
  const interactive = process.stderr.isTTY === true;
  const bar = new SingleBar({
    format:
      "blocks {value}/{total} | events {events} | {rate} events/s | ETA {eta_formatted} | failed chunks {failed}",
    stream: process.stderr,
    etaBuffer: 20,
  });
  if (interactive) bar.start(total, 0, { events: 0, rate: 0, failed: 0 });
  let lastLine = 0;
  let lastStallCheck = performance.now();
  for (;;) {
    const checkpoint = await indexer.store.checkpoint();
    const indexed = checkpoint?.indexedBlock ?? from - 1n;
    const done = Number(indexed < from ? 0n : (indexed > to ? to : indexed) - from + 1n);
    const events = await indexer.store.countEvents(from, indexed < to ? indexed : to);
    const seconds = (performance.now() - started) / 1000;
    const rate = Math.round(events / Math.max(seconds, 0.001));
    const failed = await indexer.queues.chunks.getJobCountByTypes("failed");
    if (interactive) bar.update(done, { events, rate, failed });
    else if (performance.now() - lastLine > 5_000 || done === total) {
      lastLine = performance.now();
      console.error(
        `blocks ${done}/${total}, events ${events}, ${rate} events/s, failed chunks ${failed}`,
      );
    }
    if (done >= total) {
      if (interactive) bar.stop();
      return { events, seconds };
    }
    if (performance.now() - lastStallCheck > STALL_CHECK_MS) {
      lastStallCheck = performance.now();
      // Lost work is queued again here too; parked work would be waited on forever.
      const { parked } = await indexer.reconcile();
      if (parked.length > 0) {
        if (interactive) bar.stop();
        throw new BackfillStalled(
          `chunk job ${parked[0]!.id} failed for good (${parked[0]!.reason}); the checkpoint stays at ${indexed}`,
        );
      }
    }
    await Bun.sleep(250);
  }
}
