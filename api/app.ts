/**
 * The read API as an Elysia app built from its dependencies alone (a database handle, Redis and
 * settings), so tests and other suites can build it on scratch resources; api/main.ts adds the
 * process around it.
 */
import { cors } from "@elysiajs/cors";
import { Elysia } from "elysia";
import type Redis from "ioredis";
import type { Logger } from "pino";
import type { Database } from "../db/client.ts";
import { hashToken } from "../db/tokens.ts";
import { logger } from "../lib/log.ts";
import { accessLog } from "./access-log.ts";
import { INDEXED_BLOCK_HEADER } from "./indexed-block.ts";
import { createAdmission, readBearerToken } from "./modules/auth/index.ts";
import { createRateLimiter } from "./modules/auth/rate-limit.ts";
import { createRevocations } from "./modules/auth/revocations.ts";
import { createTokenService } from "./modules/auth/token.ts";
import { createTokenUsage } from "./modules/auth/usage.ts";
import { CITIZENS_PREFIX, citizensModule } from "./modules/citizens/index.ts";
import { AS_OF_BLOCK_HEADER } from "./modules/citizens/model.ts";
import { createCitizensService } from "./modules/citizens/service.ts";
import { docsModule } from "./modules/docs/index.ts";
import { healthModule } from "./modules/health/index.ts";
import { createHealthService } from "./modules/health/service.ts";
import { metricsModule } from "./modules/metrics/index.ts";
import { type StreamSettings, streamModule } from "./modules/stream/index.ts";
import {
  ALLOWED_METHODS,
  BadParameter,
  DatabaseUnavailable,
  InternalError,
  isDatabaseUnreachable,
  MAX_TARGET_OCTETS,
  MethodNotAllowed,
  Problem,
  problemResponse,
  RouteNotFound,
  UriTooLong,
} from "./problems.ts";
import type { Reads } from "./reads.ts";
import { createResponseCache } from "./response-cache.ts";

export interface ApiSettings {
  rateLimitPerMinute: number;
  /**
   * The window a token may make rateLimitPerMinute requests in: a minute unless set (tests
   * shorten it rather than wait a minute out).
   */
  rateLimitWindowMs?: number;
  readyMaxLagBlocks: number;
  /** Redis keys (the rate limiter's) go under this prefix. */
  keyPrefix: string;
  imageTemplateS1?: string;
  imageTemplateS2?: string;
  /** Browser origins allowed to read the API (CORS); none by default. */
  corsOrigins?: string[];
  /** Responses kept per instance for the current data version; 0 turns the cache off. */
  responseCacheEntries?: number;
  /** Limits of the live stream (modules/stream); its defaults otherwise. */
  stream?: Partial<StreamSettings>;
  /** How often tokens' last use goes to Postgres (modules/auth/usage.ts); a minute otherwise. */
  tokenUsageFlushMs?: number;
  /**
   * Which of the API processes sharing the port this is (0 the first; api/processes.ts); unset
   * when it is the only one. Its stream leases and its metrics carry it.
   */
  processSlot?: number;
}

export interface AppDependencies {
  /** The database answers are read from: a hot standby (DATABASE_READ_URL) or the primary. */
  db: Database;
  /**
   * The primary (DATABASE_URL), when `db` is a standby of it: token use is written there, and
   * revocations and /readyz's replica lag read there. Unset, `db` is the primary.
   */
  primary?: Database;
  /** The client the hot read statements run on (connections.ts). */
  reads: Reads;
  redis: Redis;
  settings: ApiSettings;
  /** The chain head for /readyz; without it readiness does not judge lag. */
  chainHead?: () => Promise<bigint>;
  /**
   * Calls back whenever the indexed block `db` holds moves (connections.ts: NOTIFY on the
   * primary, polling on a standby); without it the response cache still serves only current
   * bodies, but keeps old ones until replaced.
   */
  watchIndexedBlock?: (onMove: () => void) => void;
  /**
   * Calls back with a token's id when it is revoked (NOTIFY on the primary, see connections.ts),
   * and with none when the listener (re)connects (notifications meanwhile are lost); without it
   * an open stream of a revoked token lasts until its idle close, and a standby behind the
   * primary admits a revoked token until it replays the revocation.
   */
  watchRevokedTokens?: (onRevoked: (tokenId?: number) => void) => void;
  log?: Logger;
}

/**
 * Which of the API processes sharing the port answered (API_PROCESSES above 1 only), so an
 * operator can tell a slow or failing process from its peers.
 */
export const API_PROCESS_HEADER = "x-api-process";

/** The length of a request URL's path and query (its origin left out). */
function targetOctets(url: string): number {
  return url.length - url.indexOf("/", url.indexOf("//") + 2);
}

/** The name of the parameter a validation error is about ("address" from "/address"). */
function parameterOf(path: string | undefined, fallback: string): string {
  const name = path?.split("/").filter(Boolean)[0];
  return name ?? fallback;
}

export function createApp({
  db,
  primary = db,
  reads,
  redis,
  settings,
  chainHead,
  watchIndexedBlock,
  watchRevokedTokens,
  log = logger("api"),
}: AppDependencies) {
  // Set only when `db` is a standby: what asks how far behind it is.
  const primaryOfStandby = primary === db ? undefined : primary;
  const tokens = createTokenService(db, primary);
  const revocations = createRevocations({ primary, log });
  watchRevokedTokens?.((tokenId) => revocations.heard(tokenId));
  // Closed on stop: the counts not yet synced go to Redis, so the other instances still see them.
  const limiter = createRateLimiter({
    redis,
    keyPrefix: settings.keyPrefix,
    perWindow: settings.rateLimitPerMinute,
    windowMs: settings.rateLimitWindowMs,
    log,
  });
  // Closed on stop too: the uses noted since the last flush are written.
  const usage = createTokenUsage({ db: primary, flushEveryMs: settings.tokenUsageFlushMs, log });
  const { admit, judged } = createAdmission({
    limiter,
    usage,
    revoked: revocations.has,
  });
  const cache = createResponseCache(settings.responseCacheEntries ?? 0);
  if (cache.enabled) watchIndexedBlock?.(() => cache.clear());

  /**
   * Request validation (and the parameter checks a handler makes before it reads) runs before the
   * token check, so a bad parameter on a protected path checks the token here: an unknown token
   * is still 401, never a 400.
   */
  async function authenticateRefused(request: Request, set: { headers: Record<string, unknown> }) {
    if (!new URL(request.url).pathname.startsWith(CITIZENS_PREFIX)) return;
    admit(
      await tokens.check(
        hashToken(readBearerToken(request.headers.get("authorization") ?? undefined)),
      ),
      set,
    );
  }

  const corsOrigins = settings.corsOrigins ?? [];
  const processSlot = settings.processSlot === undefined ? undefined : String(settings.processSlot);
  // onError reaches only the routes added after it: the modules that answer problems follow it.
  return new Elysia()
    .use(
      corsOrigins.length === 0
        ? new Elysia()
        : cors({
            origin: corsOrigins,
            methods: ["GET", "HEAD", "OPTIONS"],
            // last-event-id: a browser dashboard resuming the live stream (modules/stream).
            allowedHeaders: ["authorization", "if-none-match", "last-event-id"],
            exposeHeaders: [
              INDEXED_BLOCK_HEADER,
              AS_OF_BLOCK_HEADER,
              "etag",
              "retry-after",
              "www-authenticate",
            ],
            credentials: false,
            maxAge: 600,
          }),
    )
    .onStop(() => Promise.all([limiter.close(), usage.close()]))
    .onRequest(({ request, set }) => {
      if (processSlot !== undefined) set.headers[API_PROCESS_HEADER] = processSlot;
      const octets = targetOctets(request.url);
      if (octets > MAX_TARGET_OCTETS) throw new UriTooLong(octets);
    })
    .use(accessLog(log))
    .use(metricsModule({ db, reads, cache, chainHead, processSlot: settings.processSlot }))
    .onError(async ({ code, error, request, set }) => {
      let problem = toProblem(code, error, request.method);
      if (problem instanceof BadParameter && !judged(set)) {
        try {
          await authenticateRefused(request, set);
        } catch (refusal) {
          problem = refusal instanceof Problem ? refusal : toProblem("UNKNOWN", refusal, "GET");
        }
      }
      if (problem === "options") {
        return new Response(null, { status: 204, headers: { allow: ALLOWED_METHODS } });
      }
      if (problem instanceof InternalError) {
        log.error({ err: error, method: request.method, code }, "request failed");
      }
      set.status = problem.status;
      // set.headers holds X-Indexed-Block when the request got as far as a query.
      return problemResponse(problem, set.headers as Record<string, string>);
    })
    .use(docsModule())
    .use(
      healthModule({
        health: createHealthService(db, primaryOfStandby),
        maxLagBlocks: settings.readyMaxLagBlocks,
        chainHead,
      }),
    )
    .use(
      citizensModule({
        citizens: createCitizensService(db, reads, {
          s1: !settings.imageTemplateS1,
          s2: !settings.imageTemplateS2,
        }),
        tokens,
        admit,
        cache,
        images: { s1: settings.imageTemplateS1, s2: settings.imageTemplateS2 },
      }),
    )
    .use(
      streamModule({
        db,
        primary: primaryOfStandby,
        redis,
        keyPrefix: settings.keyPrefix,
        tokens,
        admit,
        images: { s1: settings.imageTemplateS1, s2: settings.imageTemplateS2 },
        watchIndexedBlock,
        watchRevokedTokens,
        settings: settings.stream,
        processSlot: settings.processSlot,
        log,
      }),
    );
}

/** Every failure becomes a named problem; only a bug or an unexpected fault is a 500. */
function toProblem(code: string | number, error: unknown, method: string): Problem | "options" {
  if (error instanceof Problem) return error;
  switch (code) {
    case "NOT_FOUND":
      if (method === "OPTIONS") return "options";
      if (method !== "GET" && method !== "HEAD") return new MethodNotAllowed(method);
      return new RouteNotFound("no such path; see /openapi.json");
    case "VALIDATION": {
      const validation = error as {
        type?: string;
        valueError?: { path?: string; schema?: { description?: string } };
      };
      // A response that fails its own schema is our bug, not the client's.
      if (validation.type === "response") return new InternalError();
      const parameter = parameterOf(validation.valueError?.path, validation.type ?? "request");
      const description = validation.valueError?.schema?.description;
      return new BadParameter(
        parameter,
        description ? `${parameter}: ${description}` : `${parameter} is not valid`,
      );
    }
    case "PARSE":
      return new BadParameter("body", "the request body could not be parsed");
    case "INVALID_COOKIE_SIGNATURE":
      return new BadParameter("cookie", "a signed cookie did not verify");
  }
  if (isDatabaseUnreachable(error)) return new DatabaseUnavailable();
  return new InternalError();
}

export type App = ReturnType<typeof createApp>;
