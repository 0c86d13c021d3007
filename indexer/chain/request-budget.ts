/**
 * A process's JSON-RPC request budget (RPC_MAX_REQUESTS_PER_SECOND), as a token bucket: each
 * call spends a token (a batch of 32 spends 32, as providers count them), tokens come back at
 * the budget's rate, and a call that finds none waits its turn. Callers are served in arrival
 * order so a large batch is not starved by single calls.
 *
 * The bucket holds half a second of calls, not a whole one: a provider's own bucket is usually
 * a second deep, and requests leaving back to back can arrive closer together than they left,
 * so the slack keeps a burst from ever looking like more than the budget at the provider.
 *
 * A 429 from the node (its own count disagrees, or another process shares the key) pauses the
 * whole bucket for its Retry-After, so every call of the process waits instead of each retrying
 * into the same refusal. Per process, like Ponder's maxRequestsPerSecond: processes sharing one
 * provider key split the key's budget between them (see docs/operators.md).
 */
export class RequestBudget {
  /** The most calls one HTTP request may carry: the client's JSON-RPC batches stay below it. */
  readonly capacity: number;
  private tokens: number;
  private refilledAt = performance.now();
  private pausedUntil = 0;
  private turn: Promise<void> = Promise.resolve();

  constructor(readonly perSecond: number) {
    this.capacity = Math.max(1, Math.floor(perSecond / 2));
    this.tokens = this.capacity;
  }

  /** Resolves once `calls` calls may leave (at most `capacity` are counted at once). */
  take(calls: number): Promise<void> {
    const mine = this.turn.then(() => this.wait(Math.min(Math.max(1, calls), this.capacity)));
    this.turn = mine;
    return mine;
  }

  /** The node said to wait (429 with Retry-After): nothing leaves until then. */
  pause(ms: number) {
    this.pausedUntil = Math.max(this.pausedUntil, performance.now() + ms);
  }

  private async wait(calls: number) {
    for (;;) {
      const now = performance.now();
      if (now < this.pausedUntil) {
        await Bun.sleep(this.pausedUntil - now);
        continue;
      }
      this.tokens = Math.min(
        this.capacity,
        this.tokens + ((now - this.refilledAt) / 1_000) * this.perSecond,
      );
      this.refilledAt = now;
      if (this.tokens >= calls) {
        this.tokens -= calls;
        return;
      }
      await Bun.sleep(((calls - this.tokens) / this.perSecond) * 1_000);
    }
  }
}
