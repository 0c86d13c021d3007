/**
 * A wallet's staked citizens kept current from `GET /v1/staking/citizens/stream`: one Map,
 * updated in place, batch by batch.
 *
 * The browser's EventSource cannot send an Authorization header, so the stream is read with
 * fetch and parsed by eventsource-parser. Events are held until the `synced` that closes their
 * batch and then applied together (a `reset` in the batch empties the map first), so the map
 * always equals the wallet's citizens at one block: a connection lost mid-batch drops the
 * partial batch, and the resume with Last-Event-ID (the last `synced` id) sends it again whole.
 * Reorg corrections arrive as ordinary batches and are applied the same way.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { type Fetch, pause, retryAfterMs } from "./http.ts";
import { type ApiProblem, problemFromResponse } from "./problem.ts";
import { type Citizen, type CitizenEvent, citizenKey, type RemovedEvent } from "./types.ts";

export interface Change {
  /** The block the citizens now reflect. */
  block: number;
  /** The map was emptied first (the server could not tell what this client held). */
  reset: boolean;
  /** Keys (`s1:7`) set or replaced, and keys removed, by this batch. */
  updated: string[];
  removed: string[];
}

export interface WatchOptions {
  /** Called after each batch is applied (every indexed block, with or without changes). */
  onChange?: (live: LiveCitizens, change: Change) => void;
  /** Called once with the error that ended the stream for good (a 401, a bad address). */
  onError?: (error: ApiProblem) => void;
  /**
   * Resume from a `synced` id kept earlier (`live.lastEventId`), with the citizens held as of it
   * in `citizens`; that Map is then the one updated.
   */
  lastEventId?: string;
  citizens?: Map<string, Citizen>;
}

export interface LiveCitizens {
  /** The wallet's citizens keyed `<type>:<id>`; the same Map throughout, updated in place. */
  readonly citizens: Map<string, Citizen>;
  /** The block the map reflects; undefined before the first batch. */
  readonly block: number | undefined;
  /** The id a resume sends (the last `synced` id). */
  readonly lastEventId: string | undefined;
  /** Connections made so far (1 + reconnects). */
  readonly connections: number;
  /** Resolves once the first batch is applied; rejects if the stream fails for good first. */
  readonly ready: Promise<void>;
  /** Resolves on close(); rejects with the ApiProblem that ended the stream. */
  readonly done: Promise<void>;
  close(): void;
}

/** Before the server's `retry:` arrives, a lost connection is retried after this long. */
const DEFAULT_RETRY_MS = 1_000;
/** 5xx answers (an API restarting, Postgres away) back off up to this. */
const MAX_BACKOFF_MS = 30_000;

export const STREAM_PATH = "/v1/staking/citizens/stream";

export function watchCitizens(
  input: { baseUrl: string; token: string; address: string; fetch?: Fetch } & WatchOptions,
): LiveCitizens {
  const fetcher = input.fetch ?? ((url, init) => fetch(url, init));
  const url = `${input.baseUrl.replace(/\/+$/, "")}${STREAM_PATH}?address=${encodeURIComponent(input.address)}`;
  const abort = new AbortController();
  const citizens = input.citizens ?? new Map<string, Citizen>();
  let block: number | undefined;
  let lastEventId = input.lastEventId;
  let connections = 0;
  let retryMs = DEFAULT_RETRY_MS;
  let pending: EventSourceMessage[] = [];

  let markReady: () => void = () => {};
  let failReady: (error: unknown) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  // A caller that awaits only `done` must not see an unhandled rejection from `ready`.
  ready.catch(() => {});

  const live: LiveCitizens = {
    citizens,
    get block() {
      return block;
    },
    get lastEventId() {
      return lastEventId;
    },
    get connections() {
      return connections;
    },
    ready,
    done: Promise.resolve(),
    close: () => abort.abort(),
  };

  function apply(batch: EventSourceMessage[], closing: EventSourceMessage) {
    const change: Change = {
      block: (JSON.parse(closing.data) as { block: number }).block,
      reset: false,
      updated: [],
      removed: [],
    };
    for (const message of batch) {
      if (message.event === "reset") {
        citizens.clear();
        change.reset = true;
      } else if (message.event === "citizen") {
        const { citizen } = JSON.parse(message.data) as CitizenEvent;
        citizens.set(citizenKey(citizen), citizen);
        change.updated.push(citizenKey(citizen));
      } else if (message.event === "removed") {
        const removed = JSON.parse(message.data) as RemovedEvent;
        citizens.delete(citizenKey(removed));
        change.removed.push(citizenKey(removed));
      }
    }
    block = change.block;
    lastEventId = closing.id ?? String(change.block);
    markReady();
    input.onChange?.(live, change);
  }

  const parser = createParser({
    onEvent(message) {
      if (message.event === "synced") {
        const batch = pending;
        pending = [];
        apply(batch, message);
      } else {
        pending.push(message);
      }
    },
    onRetry(ms) {
      retryMs = ms;
    },
  });

  /** One connection, read to its end; a fatal answer is returned as its problem. */
  async function connect(): Promise<ApiProblem | "again" | number> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${input.token}`,
      accept: "text/event-stream",
    };
    if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
    const response = await fetcher(url, { headers, signal: abort.signal, cache: "no-store" });
    connections++;
    if (response.status === 429) {
      await response.body?.cancel();
      return retryAfterMs(response.headers.get("retry-after"));
    }
    if (response.status >= 500) {
      await response.body?.cancel();
      return "again";
    }
    if (response.status !== 200 || response.body === null) return problemFromResponse(response);
    pending = [];
    parser.reset();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } finally {
      reader.releaseLock();
    }
    return retryMs;
  }

  async function run(): Promise<void> {
    let backoffMs = DEFAULT_RETRY_MS;
    while (!abort.signal.aborted) {
      let outcome: Awaited<ReturnType<typeof connect>>;
      try {
        outcome = await connect();
      } catch {
        // The connection failed or dropped (or close() aborted it): resume after `retry`.
        outcome = retryMs;
      }
      if (abort.signal.aborted) return;
      if (typeof outcome === "object") {
        input.onError?.(outcome);
        failReady(outcome);
        throw outcome;
      }
      if (outcome === "again") {
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        await pause(backoffMs, abort.signal);
      } else {
        backoffMs = DEFAULT_RETRY_MS;
        await pause(outcome, abort.signal);
      }
    }
  }

  const done = run();
  done.catch(() => {});
  return Object.assign(live, { done });
}
