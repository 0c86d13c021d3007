/**
 * How many staker events one worker process works on at once, across its concurrent chunk jobs.
 * A chunk's memory follows its events (the logs, their reads, the rows, the write), and a chunk
 * of a few blocks holds anywhere from none to thousands of them, so a cap on jobs alone lets a
 * dense stretch of the chain hold several thousand events at once and the process's peak memory
 * grow with the chain's density. A chunk asks for its events once its logs are in, before its
 * reads, and holds them until it is written. One chunk always goes ahead alone, however large,
 * so a dense chunk is never stuck; empty chunks never wait.
 */
export class EventBudget {
  private held = 0;
  private readonly waiting: { count: number; admit: () => void }[] = [];

  constructor(readonly limit: number) {}

  /**
   * A hold for one chunk job: `admit` once its events are known (it waits while other chunks
   * hold too many), `release` once it is written or has failed (never while `admit` waits).
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
