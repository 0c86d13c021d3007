/**
 * Every error the API answers with, as named values. Each knows its status and renders itself as
 * an RFC 9457 problem document; app.ts turns any thrown one into the response.
 */
import { t } from "elysia";
import { RATE_WINDOW_MS, type RateLimit } from "./modules/auth/rate-limit.ts";

const PROBLEM_BASE = "https://citizen-staking.dev/problems/";

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  parameter?: string;
}

export abstract class Problem extends Error {
  abstract readonly status: number;
  abstract readonly title: string;
  /** The last segment of the problem's `type` URI. */
  abstract readonly slug: string;
  readonly headers: Record<string, string> = {};

  body(): ProblemBody {
    return {
      type: `${PROBLEM_BASE}${this.slug}`,
      title: this.title,
      status: this.status,
      detail: this.message,
    };
  }
}

/** A query or path parameter that is missing or malformed. */
export class BadParameter extends Problem {
  override name = "BadParameter";
  readonly status = 400;
  readonly title = "Bad parameter";
  readonly slug = "bad-parameter";
  constructor(
    readonly parameter: string,
    detail: string,
  ) {
    super(detail);
  }
  override body(): ProblemBody {
    return { ...super.body(), parameter: this.parameter };
  }
}

/** No usable bearer token; `tokenGiven` picks the RFC 6750 challenge. */
export class Unauthorized extends Problem {
  override name = "Unauthorized";
  readonly status = 401;
  readonly title = "Unauthorized";
  readonly slug = "unauthorized";
  constructor(detail: string, tokenGiven: boolean) {
    super(detail);
    this.headers["www-authenticate"] = tokenGiven ? 'Bearer error="invalid_token"' : "Bearer";
  }
}

export class CitizenNotStaked extends Problem {
  override name = "CitizenNotStaked";
  readonly status = 404;
  readonly title = "Citizen not staked";
  readonly slug = "citizen-not-staked";
}

export class RouteNotFound extends Problem {
  override name = "RouteNotFound";
  readonly status = 404;
  readonly title = "Not found";
  readonly slug = "not-found";
}

/**
 * The longest path and query read: the 8,000 octets RFC 9110 §4.1 asks every recipient to
 * support. Longer ones get 414 up to Bun's own bound (16 KiB of request line and headers, then
 * 431 before the app).
 */
export const MAX_TARGET_OCTETS = 8_000;

/**
 * A request target longer than MAX_TARGET_OCTETS: refused whole rather than read, so a number
 * padded with zeros gets the same answer at any length the API reads.
 */
export class UriTooLong extends Problem {
  override name = "UriTooLong";
  readonly status = 414;
  readonly title = "URI too long";
  readonly slug = "uri-too-long";
  constructor(octets: number) {
    super(`the path and query are ${octets} octets; at most ${MAX_TARGET_OCTETS} are read`);
  }
}

export class MethodNotAllowed extends Problem {
  override name = "MethodNotAllowed";
  readonly status = 405;
  readonly title = "Method not allowed";
  readonly slug = "method-not-allowed";
  constructor(method: string) {
    super(`${method} is not served; use GET, HEAD or OPTIONS`);
    this.headers.allow = ALLOWED_METHODS;
  }
}

export class RateLimited extends Problem {
  override name = "RateLimited";
  readonly status = 429;
  readonly title = "Too many requests";
  readonly slug = "rate-limited";
  constructor(limit: RateLimit, retryAfterSeconds: number) {
    const window =
      limit.windowMs === RATE_WINDOW_MS ? "a minute" : `every ${limit.windowMs / 1000} s`;
    super(`this token may make ${limit.perWindow} requests ${window}`);
    this.headers["retry-after"] = String(retryAfterSeconds);
  }
}

/** Postgres cannot be reached; the pool reconnects by itself, so the client should retry. */
export class DatabaseUnavailable extends Problem {
  override name = "DatabaseUnavailable";
  readonly status = 503;
  readonly title = "Service unavailable";
  readonly slug = "database-unavailable";
  constructor(retryAfterSeconds = 5) {
    super("the database cannot be reached right now; retry shortly");
    this.headers["retry-after"] = String(retryAfterSeconds);
  }
}

/** Anything unexpected: the body says nothing about the cause (that goes to the log). */
export class InternalError extends Problem {
  override name = "InternalError";
  readonly status = 500;
  readonly title = "Internal server error";
  readonly slug = "internal";
  constructor() {
    super("the server failed to answer this request");
  }
}

export const ALLOWED_METHODS = "GET, HEAD, OPTIONS";

export function problemResponse(problem: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problem.body()), {
    status: problem.status,
    headers: { ...headers, ...problem.headers, "content-type": "application/problem+json" },
  });
}

/** postgres.js codes for a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set([
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "EPIPE",
]);

/** Bun's SQL client (api/reads.ts) names a connection it could not make or lost so. */
const BUN_CONNECTION_CODE = /^ERR_POSTGRES_(CONNECTION_|IDLE_TIMEOUT|LIFETIME_TIMEOUT)/;

/**
 * A server refusing work: SQLSTATE class 08 connection exception, 57P0x shutdown, 53300 too many
 * clients, and class 40 (40001, 40P01), which a hot standby (DATABASE_READ_URL) raises when it
 * cancels a statement that conflicts with the WAL it replays: the API runs no serializable
 * transaction, so on its read-only statements class 40 only ever means "ask again shortly".
 */
function isRefusal(sqlState: string): boolean {
  return (
    sqlState.startsWith("08") ||
    /^57P0[1-3]$/.test(sqlState) ||
    sqlState === "53300" ||
    sqlState === "40001" ||
    sqlState === "40P01"
  );
}

/**
 * True for an error that means "Postgres is not there right now": a socket error, or a server
 * refusing work. postgres.js puts the SQLSTATE in `code`, Bun's client in `errno`; drizzle wraps
 * driver errors, so the cause chain is walked.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (typeof current !== "object") return false;
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") {
      if (CONNECTION_CODES.has(code) || BUN_CONNECTION_CODE.test(code) || isRefusal(code)) {
        return true;
      }
    }
    const errno = (current as { errno?: unknown }).errno;
    if (typeof errno === "string" && isRefusal(errno)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Runs a database call, turning "cannot reach Postgres" into DatabaseUnavailable. */
export async function fromDatabase<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (isDatabaseUnreachable(error)) throw new DatabaseUnavailable();
    throw error;
  }
}

/** The body of every error response, for the OpenAPI document. */
export const ProblemSchema = t.Object(
  {
    type: t.String(),
    title: t.String(),
    status: t.Number(),
    detail: t.String(),
    parameter: t.Optional(t.String({ description: "400 only: the offending parameter" })),
  },
  { description: "RFC 9457 problem (application/problem+json)" },
);
