import type { LogSpans } from "../fetch/fetch-range.ts";

/**
 * How many staker events one worker process works on at once, across its concurrent chunk jobs.
 * A chunk's memory follows its events (the logs, their reads, the rows, the write), and a chunk
 * of a few blocks holds anywhere from none to thousands of them, so a cap on jobs alone lets a
 * dense stretch of the chain hold several thousand events at once and the process's peak memory
 * grow with the chain's density. A chunk job works its range in slices of blocks (index-range.ts)
 * that each hold at most the budget's events, a single block however large excepted: a slice asks
 * for its events once its logs are in, before its reads, and holds them until its rows are
 * written (not through the checkpoint's move after them). A slice past the rest of the budget
 * waits; one always goes ahead alone, so a dense block is never stuck; empty slices never wait.
 */
export class EventBudget implements LogSpans {
  private held = 0;
  private readonly waiting: { count: number; admit: () => void }[] = [];
  /**
   * Blocks the staker's next eth_getLogs spans while a slice's logs are counted, learnt from the
   * spans before. A process starts at one block, since nothing says how dense the chain is and
   * a span's logs are held whole once fetched (those past the budget are dropped and fetched
   * again with the next slice); on a thin chain the span doubles an eth_getLogs.
   */
  private span = 1;

  constructor(readonly limit: number) {}

  /**
   * A hold for one slice: `admit` once its events are known (it waits while other slices hold
   * too many), `release` once its rows are written or it has failed (never while `admit` waits).
   */
  hold() {
    let count = 0;
    return {
      admit: async (events: number) => {
        if (events === 0 || count > 0) return;
        count = events;
        await this.take(events);
      },
      release: () => {
        if (count > 0) this.give(count);
        count = 0;
      },
    };
  }

  /** How many blocks the staker's next eth_getLogs asks (a slice's end stops it anyway). */
  blocks(): number {
    return this.span;
  }

  /**
   * A span of `blocks` held `events`: the next spans as many blocks as the budget's events fill
   * at that density, at most doubling, so a dense stretch after a thin one is met by an answer
   * of bounded size. A per-process hint, like the log range's.
   */
  counted(blocks: number, events: number) {
    const fits = events === 0 ? Number.MAX_SAFE_INTEGER : (blocks * this.limit) / events;
    // A span cut short (by its range's end, or the room left) says how dense, not how far to grow.
    const most = blocks >= THIN_SPAN ? fits : Math.max(blocks, this.span) * GROWTH;
    this.span = Math.max(1, Math.floor(Math.min(fits, most)));
  }

  private take(count: number): Promise<void> {
    if (this.fits(count) && this.waiting.length === 0) {
      this.held += count;
      return Promise.resolve();
    }
    return new Promise((admit) => {
      this.waiting.push({ count, admit });
    });
  }

  private give(count: number) {
    this.held -= count;
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.count)) {
      const next = this.waiting.shift()!;
      this.held += next.count;
      next.admit();
    }
  }

  private fits(count: number) {
    return this.held === 0 || this.held + count <= this.limit;
  }
}

/** How many times the blocks of the span before a span may ask. */
const GROWTH = 2;

/**
 * A span this long that held no more than the budget is a thin stretch (a dense chain holds
 * hundreds of events a block): the next asks what the budget fills at once, so a thin chain's
 * slices are counted in few eth_getLogs.
 */
const THIN_SPAN = 1_024;
