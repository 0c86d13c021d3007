/**
 * Bearer-token authentication and the per-token rate limit. The plugin reads the Authorization
 * header at the transform stage, before request validation, so a request without a usable header
 * gets 401 whatever its parameters. The token itself is checked by the data query's own
 * statement (see token.ts); `admit` then judges that check and applies the rate limit.
 *
 * The header is parsed here rather than by @elysiajs/bearer: that plugin compares the scheme
 * case-sensitively and also reads `?access_token=`, and we want neither.
 */
import { Elysia } from "elysia";
import { hashToken } from "../../../db/tokens.ts";
import { setIndexedBlock } from "../../indexed-block.ts";
import { RateLimited, Unauthorized } from "../../problems.ts";
import type { RateLimiter } from "./rate-limit.ts";
import type { TokenCheck } from "./token.ts";
import type { TokenUsage } from "./usage.ts";

/** RFC 6750 token68; anything longer than any token we issue is refused without a lookup. */
const TOKEN_SHAPE = /^[A-Za-z0-9\-._~+/]{1,256}=*$/;
const SCHEME = "bearer";

/**
 * The token of an `Authorization: Bearer <token>` header. The scheme is compared
 * case-insensitively (RFC 9110 §11.1), then one space and an RFC 6750 token68 must follow.
 * Tokens are taken from this header only, never a query string (URLs get logged).
 */
export function readBearerToken(header: string | undefined): string {
  // The scheme runs to the first space (or the end); sliced, not split: every request pays this.
  const space = header?.indexOf(" ") ?? -1;
  const scheme = space === -1 ? header : header?.slice(0, space);
  if (header === undefined || scheme?.length !== SCHEME.length || scheme.toLowerCase() !== SCHEME) {
    throw new Unauthorized("send Authorization: Bearer <token>", false);
  }
  const token = header.slice(SCHEME.length + 1);
  if (space !== SCHEME.length || !TOKEN_SHAPE.test(token)) {
    throw new Unauthorized('the Authorization header is not "Bearer <token>"', true);
  }
  return token;
}

/** Gives protected routes the SHA-256 of the presented token, the form the database keeps. */
export function authentication() {
  // The one header from the request, not Elysia's `headers` object of them all.
  return new Elysia({ name: "authentication" }).derive({ as: "scoped" }, ({ request }) => ({
    tokenHash: hashToken(readBearerToken(request.headers.get("authorization") ?? undefined)),
  }));
}

export interface AdmissionDependencies {
  limiter: RateLimiter;
  usage: TokenUsage;
  /**
   * Whether the primary announced this token revoked (revocations.ts): a statement read from a
   * standby behind it may still find the token valid.
   */
  revoked?: (tokenId: number) => boolean;
}

const REFUSALS = {
  unknown: "unknown token",
  revoked: "this token has been revoked",
  expired: "this token has expired",
} as const;

/**
 * Refuses an unknown, revoked or expired token (401) and a token over its limit (429), and notes
 * an admitted token as used. `count` is false when the same request was already counted (a
 * second check after a cache miss).
 */
export type Admit = (
  check: TokenCheck,
  set: { headers: Record<string, unknown> },
  count?: boolean,
) => void;

export interface Admission {
  admit: Admit;
  /**
   * Whether `admit` judged the token of the request whose `set` this is: a bad parameter found
   * before that (validation, a malformed cursor) still owes the token check, so an unknown token
   * is 401 whatever the parameters.
   */
  judged(set: object): boolean;
}

export function createAdmission({
  limiter,
  usage,
  revoked = () => false,
}: AdmissionDependencies): Admission {
  // Each request has its own `set`; held weakly, so it goes with the request.
  const judgedSets = new WeakSet<object>();
  const admit: Admit = (check, set, count = true) => {
    judgedSets.add(set);
    setIndexedBlock(set, check.indexedBlock);
    if (check.status !== "valid") throw new Unauthorized(REFUSALS[check.status], true);
    if (revoked(check.tokenId)) throw new Unauthorized(REFUSALS.revoked, true);
    if (!count) return;
    const decision = limiter.hit(check.tokenId);
    if (!decision.allowed) throw new RateLimited(limiter.limit, decision.retryAfterSeconds);
    usage.used(check.tokenId);
  };
  return { admit, judged: (set) => judgedSets.has(set) };
}
