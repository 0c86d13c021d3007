/**
 * GET /v1/staking/citizens/stream?address=…: Server-Sent Events with every change to the
 * citizens an address has staked, as the indexer reaches each block. The request is judged like
 * the other citizen endpoints (401, 400, 429 as problem+json) before the stream starts.
 */
import { Elysia, type TSchema } from "elysia";
import type Redis from "ioredis";
import type { Logger } from "pino";
import type { Database } from "../../../db/client.ts";
import { INDEXED_BLOCK_HEADER } from "../../indexed-block.ts";
import { problemResponses } from "../../openapi.ts";
import { Problem } from "../../problems.ts";
import { refuseUnexpectedParameters } from "../../query-parameters.ts";
import { type Admit, authentication } from "../auth/index.ts";
import type { TokenService } from "../auth/token.ts";
import { CITIZENS_PREFIX } from "../citizens/index.ts";
import type { ImageTemplates } from "../citizens/record.ts";
import { parseLastEventId } from "./changes.ts";
import { openConnection, RECONNECT_MS } from "./connection.ts";
import { createHub } from "./hub.ts";
import { StreamEvent, StreamHeaders, StreamQuery } from "./model.ts";
import { createStreamService } from "./service.ts";
import { createStreamSlots } from "./slots.ts";

export interface StreamSettings {
  /** Open streams one token may hold across all instances; one more is 429. */
  maxPerToken: number;
  /** A comment line this often keeps proxies and the client from timing the connection out. */
  keepAliveMs: number;
  /**
   * A stream that sent no change for this long is closed; the client reconnects with
   * Last-Event-ID (losing nothing), which also checks its token again.
   */
  idleMs: number;
}

export const DEFAULT_STREAM_SETTINGS: StreamSettings = {
  maxPerToken: 5,
  keepAliveMs: 15_000,
  idleMs: 600_000,
};

/** One token holds as many streams as it may; another one is refused. */
export class TooManyStreams extends Problem {
  override name = "TooManyStreams";
  readonly status = 429;
  readonly title = "Too many streams";
  readonly slug = "too-many-streams";
  constructor(limit: number, retryAfterSeconds: number) {
    super(`this token may hold ${limit} open streams; close one first`);
    this.headers["retry-after"] = String(retryAfterSeconds);
  }
}

export interface StreamDependencies {
  db: Database;
  /** The primary, when `db` is a standby of it: a resume above the standby's block asks it. */
  primary?: Database;
  /** Holds the leases of the per-token bound, under `keyPrefix`. */
  redis: Redis;
  keyPrefix: string;
  tokens: TokenService;
  admit: Admit;
  images: ImageTemplates;
  watchIndexedBlock?: (onMove: () => void) => void;
  /** A token's id when it is revoked; none when revocations may have been missed. */
  watchRevokedTokens?: (onRevoked: (tokenId?: number) => void) => void;
  settings?: Partial<StreamSettings>;
  /** Which of the API processes sharing this port this is (config.api.processSlot). */
  processSlot?: number;
  log: Logger;
}

export function streamModule({
  db,
  primary,
  redis,
  keyPrefix,
  tokens,
  admit,
  images,
  watchIndexedBlock,
  watchRevokedTokens,
  settings,
  processSlot,
  log,
}: StreamDependencies) {
  // A setting left undefined (its variable unset) keeps the default.
  const limits = { ...DEFAULT_STREAM_SETTINGS };
  for (const [name, value] of Object.entries(settings ?? {}) as [keyof StreamSettings, number][]) {
    if (value !== undefined) limits[name] = value;
  }
  const service = createStreamService(db, primary);
  const hub = createHub({ service, log });
  watchIndexedBlock?.(() => hub.moved());
  const slots = createStreamSlots({
    redis,
    keyPrefix,
    maxPerToken: limits.maxPerToken,
    processSlot,
    log,
  });
  const closers = new Set<() => void>();
  /** The open streams of each token, so a revocation ends them. */
  const byToken = new Map<number, Set<() => void>>();
  /** The process is stopping: every stream ends, and this instance's leases stop counting. */
  const closeAll = () => {
    for (const close of [...closers]) close();
    void slots.retire();
  };
  const closeToken = (tokenId: number) => {
    for (const close of [...(byToken.get(tokenId) ?? [])]) close();
  };
  watchRevokedTokens?.((tokenId) => {
    if (tokenId !== undefined) return closeToken(tokenId);
    tokens.refusedAmong([...byToken.keys()]).then(
      (refused) => refused.forEach(closeToken),
      (error: unknown) =>
        log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "cannot check the tokens of open streams after the listener reconnected",
        ),
    );
  });
  const connections = {
    service,
    hub,
    images,
    keepAliveMs: limits.keepAliveMs,
    idleMs: limits.idleMs,
    track(tokenId: number, close: () => void) {
      closers.add(close);
      let ofToken = byToken.get(tokenId);
      if (!ofToken) {
        ofToken = new Set();
        byToken.set(tokenId, ofToken);
      }
      ofToken.add(close);
      return () => {
        closers.delete(close);
        const open = byToken.get(tokenId);
        open?.delete(close);
        if (open?.size === 0) byToken.delete(tokenId);
      };
    },
  };

  return (
    new Elysia({ prefix: CITIZENS_PREFIX })
      .use(authentication())
      /**
       * Ends every open stream (clients reconnect elsewhere with their Last-Event-ID). A graceful
       * app.stop() waits for open requests before its onStop hooks run, so the process calls this
       * first (api/main.ts); the onStop hook covers stop(true).
       */
      .decorate("closeStreams", closeAll)
      .onStop(closeAll)
      .get(
        "/stream",
        async ({ query, headers, request, set, tokenHash, server }) => {
          const check = await tokens.check(tokenHash);
          admit(check, set);
          if (check.status !== "valid") return;
          const slot = await slots.acquire(check.tokenId, server?.port);
          if (slot === undefined) {
            throw new TooManyStreams(limits.maxPerToken, Math.ceil(RECONNECT_MS / 1000));
          }
          const lastEventId = headers["last-event-id"];
          const { body, close } = openConnection(
            connections,
            query.address.toLowerCase(),
            slot,
            lastEventId === undefined ? undefined : parseLastEventId(lastEventId),
            { id: check.tokenId, expiresInMs: check.expiresInMs },
          );
          request.signal.addEventListener("abort", close);
          // A revocation notified between the check above and the stream's registration has
          // found no stream to end: one more look, now that a notification would find it.
          tokens.refusedAmong([check.tokenId]).then(
            (refused) => refused.length > 0 && close(),
            () => {
              // Postgres away: the stream's own reads fail too, and the listener's reconnect
              // checks every open stream's token.
            },
          );
          // The server's idle timeout would cut a quiet stream; the keep-alive paces it instead.
          server?.timeout(request, 0);
          return new Response(body, {
            headers: {
              "content-type": "text/event-stream; charset=utf-8",
              "cache-control": "no-store",
              // Proxies such as nginx would otherwise buffer the events.
              "x-accel-buffering": "no",
              ...(check.indexedBlock === null
                ? {}
                : { [INDEXED_BLOCK_HEADER]: check.indexedBlock.toString() }),
            },
          });
        },
        {
          query: StreamQuery,
          transform: refuseUnexpectedParameters(StreamQuery),
          headers: StreamHeaders,
          detail: {
            summary: "Live changes to the citizens an address has staked (Server-Sent Events)",
            description: STREAM_DESCRIPTION,
            tags: ["citizens"],
            security: [{ bearer: [] }],
            responses: {
              200: {
                description:
                  "an event stream; each event's data is one of the shapes below, named by its `event:` field",
                content: { "text/event-stream": { schema: StreamEvent as TSchema } },
              },
              ...problemResponses(400, 401, 429, 503),
            },
          },
        },
      )
  );
}

const STREAM_DESCRIPTION = `Server-Sent Events. Without Last-Event-ID the stream starts with one \`citizen\` event per citizen the address has staked, then \`synced\`. After that, each indexed block that changes the address's citizens sends a batch: \`citizen\` (the full new record, as GET /s1/{id} or /s2/{id} serves it) for a stake, a BYTES deposit or any changed number; \`removed\` (type and id) for a withdrawal or a stake a reorg took back; and a closing \`synced\` whose \`id\` is the block. Only \`synced\` carries an id, so Last-Event-ID always names a block whose batch was received whole: reconnecting with it sends exactly the changes since that block. After a reorg the corrections come as an ordinary batch whose id is the new, lower indexed block. A Last-Event-ID above the indexed block (a block a reorg took back) gets \`reset\` and the full current set; on an instance reading a replica that has not replayed that block yet, the stream sends nothing until it has. Comment lines (\`: keep-alive\`) keep the connection open; a stream with no change for a while is closed and the client resumes.`;
