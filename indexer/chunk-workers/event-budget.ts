/**
 * How many staker events one worker process works on at once, across its concurrent chunk jobs.
 * A chunk's memory follows its events (the logs, their reads, the rows, the write), and a chunk
 * of a few blocks holds anywhere from none to thousands of them, so a cap on jobs alone lets a
 * dense stretch of the chain hold several thousand events at once and the process's peak memory
 * grow with the chain's density. A chunk job works its range in slices of blocks (index-range.ts)
 * that each hold at most the budget's events, a single block however large excepted: a slice asks
 * for its events once its logs are in, before its reads, and holds them until it is written. A
 * slice past the rest of the budget waits; one always goes ahead alone, so a dense block is never
 * stuck; empty slices never wait.
 */
export class EventBudget {
  private held = 0;
  private readonly waiting: { count: number; admit: () => void }[] = [];
  /**
   * Blocks the next slice spans, learnt from the slices before. A process starts at one block,
   * since nothing says how dense the chain is and a slice's logs are fetched whole before they
   * are counted (those past the budget are dropped and fetched again with the next slice); on a
   * thin chain the span doubles a slice.
   */
  private span = 1;

  constructor(readonly limit: number) {}

  /**
   * A hold for one slice: `admit` once its events are known (it waits while other slices hold
   * too many), `release` once it is written or has failed (never while `admit` waits).
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

  /** How many blocks the next slice spans (a job's slices end at its chunk's end anyway). */
  sliceBlocks(): number {
    return this.span;
  }

  /**
   * A slice of `blocks` held `events`: the next slices span as many blocks as the budget's
   * events fill at that density, at most doubling a slice, so a dense stretch after a thin one
   * is met by a slice of bounded size. A per-process hint, like the log range's.
   */
  sliced(blocks: number, events: number) {
    const fits = events === 0 ? Number.MAX_SAFE_INTEGER : (blocks * this.limit) / events;
    const most = blocks >= THIN_SPAN ? fits : blocks * GROWTH;
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

/** How many times the blocks of the slice before a slice may span. */
const GROWTH = 2;

/**
 * A slice this long that held no more than the budget is a thin stretch (a dense chain holds
 * hundreds of events a block): the next spans what the budget fills at once, so a thin chain's
 * chunks are not cut into many slices, each with a chunk's fixed calls (on the mainnet-shaped
 * chain doubling alone made 1,210 calls, this 1,087, against 787 unsliced).
 */
const THIN_SPAN = 1_024;
