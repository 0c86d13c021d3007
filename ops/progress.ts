import { SingleBar } from "cli-progress";
import type { Indexer } from "../indexer/indexer.ts";
import { chunkJobId } from "../indexer/queues/queues.ts";
import { isParked } from "../indexer/reconciler/reconcile.ts";
import { splitRange } from "../indexer/store/ranges.ts";

/** The backfill or reindex cannot finish: a chunk job failed with an error no retry fixes. */
export class BackfillStalled extends Error {
  override name = "BackfillStalled";
}

/** How often the progress loop asks whether the remaining work still exists. */
const STALL_CHECK_MS = 2_000;

/** Where a run stands: blocks done and the events this run wrote, not those found in place. */
interface Sample {
  blocks: number;
  events: number;
}

/** What a progress display watches: the run's size in blocks and how to measure it. */
interface ProgressSource {
  total: number;
  sample(): Promise<Sample>;
  /** Throws BackfillStalled when work the run waits for can no longer finish. */
  checkStalled(): Promise<void>;
}

/**
 * A backfill of [from, to]: blocks are done once the checkpoint passes them; its events are
 * those in the range now minus those already there when it started, so a backfill over
 * indexed blocks reports what it added (nothing), not what it found.
 */
export async function backfillProgress(
  indexer: Indexer,
  from: bigint,
  to: bigint,
): Promise<ProgressSource & { eventsBefore: number }> {
  const eventsBefore = await indexer.store.countEvents(from, to);
  return {
    total: Number(to - from + 1n),
    eventsBefore,
    async sample() {
      const checkpoint = await indexer.store.checkpoint();
      const indexed = checkpoint?.indexedBlock ?? from - 1n;
      const blocks = Number(indexed < from ? 0n : (indexed > to ? to : indexed) - from + 1n);
      const events = (await indexer.store.countEvents(from, to)) - eventsBefore;
      return { blocks, events: Math.max(events, 0) };
    },
    async checkStalled() {
      // Lost work is queued again here too; parked work would be waited on forever.
      const { parked } = await indexer.reconcile();
      if (parked.length > 0) {
        const indexed = (await indexer.store.checkpoint())?.indexedBlock;
        throw new BackfillStalled(
          `chunk job ${parked[0]!.id} failed for good (${parked[0]!.reason}); the checkpoint stays at ${indexed}`,
        );
      }
    },
  };
}

/**
 * A reindex's chunk jobs, queued with `requestedAt`: a chunk is done when its job has left the
 * queue (completed jobs are removed). Its events are the ones the replaced range holds then:
 * every one of them was written again by this run.
 */
export function reindexProgress(
  indexer: Indexer,
  range: { from: bigint; to: bigint; chunkSize: number; requestedAt: number },
): ProgressSource {
  const chunks = splitRange(range.from, range.to, range.chunkSize).map((chunk) => ({
    ...chunk,
    id: chunkJobId(chunk.from, chunk.to, true, range.requestedAt),
    done: false,
  }));
  const sample: Sample = { blocks: 0, events: 0 };
  return {
    total: Number(range.to - range.from + 1n),
    async sample() {
      const open = chunks.filter((chunk) => !chunk.done);
      const states = await Promise.all(
        open.map((chunk) => indexer.queues.chunks.getJobState(chunk.id)),
      );
      for (const [index, state] of states.entries()) {
        if (state !== "unknown" && state !== "completed") continue;
        const chunk = open[index]!;
        chunk.done = true;
        sample.blocks += Number(chunk.to - chunk.from + 1n);
        sample.events += await indexer.store.countEvents(chunk.from, chunk.to);
      }
      return { ...sample };
    },
    async checkStalled() {
      for (const chunk of chunks.filter((candidate) => !candidate.done)) {
        const job = await indexer.queues.chunks.getJob(chunk.id);
        // A chunk failed any other way is retried by the reconciler (stalls, used-up retries).
        if (job && (await job.isFailed()) && isParked(job)) {
          throw new BackfillStalled(
            `chunk job ${chunk.id} failed for good (${job.failedReason}); blocks ${chunk.from}..${chunk.to} keep what they held`,
          );
        }
      }
    },
  };
}

/**
 * Shows a run's progress until every block is done: a live bar on a terminal, a line every few
 * seconds otherwise (CI logs, pipes). Throughput is this run's events per second of this run.
 */
export async function showProgress(indexer: Indexer, source: ProgressSource) {
  const started = performance.now();
  const interactive = process.stderr.isTTY === true;
  const bar = new SingleBar({
    format:
      "blocks {value}/{total} | events {events} | {rate} events/s | ETA {eta_formatted} | failed chunks {failed}",
    stream: process.stderr,
    etaBuffer: 20,
  });
  if (interactive) bar.start(source.total, 0, { events: 0, rate: 0, failed: 0 });
  let lastLine = 0;
  let lastStallCheck = performance.now();
  try {
    for (;;) {
      const { blocks, events } = await source.sample();
      const seconds = (performance.now() - started) / 1000;
      const rate = Math.round(events / Math.max(seconds, 0.001));
      const failed = await indexer.queues.chunks.getJobCountByTypes("failed");
      if (interactive) bar.update(blocks, { events, rate, failed });
      else if (performance.now() - lastLine > 5_000 || blocks >= source.total) {
        lastLine = performance.now();
        console.error(
          `blocks ${blocks}/${source.total}, events ${events}, ${rate} events/s, failed chunks ${failed}`,
        );
      }
      if (blocks >= source.total) return { events, seconds, rate };
      if (performance.now() - lastStallCheck > STALL_CHECK_MS) {
        lastStallCheck = performance.now();
        await source.checkStalled();
      }
      await Bun.sleep(250);
    }
  } finally {
    if (interactive) bar.stop();
  }
}
