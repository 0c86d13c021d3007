/**
 * Bearer-token authentication and the per-token rate limit, as a plugin the protected modules
 * `use`. It runs at the transform stage, before request validation, so an unauthenticated request
 * gets 401 whatever its parameters.
 */
import { bearer } from "@elysiajs/bearer";
import { Elysia } from "elysia";
import { setIndexedBlock } from "../../indexed-block.ts";
import { RateLimited, Unauthorized } from "../../problems.ts";
import type { RateLimiter } from "./rate-limit.ts";
import type { AuthService } from "./service.ts";

/** RFC 6750 token68; anything longer than any token we issue is refused without a lookup. */
const TOKEN_SHAPE = /^[A-Za-z0-9\-._~+/]{1,256}=*$/;

export interface AuthenticationDependencies {
  auth: AuthService;
  limiter: RateLimiter;
  rateLimitPerMinute: number;
}

export function authentication({ auth, limiter, rateLimitPerMinute }: AuthenticationDependencies) {
  return new Elysia().use(bearer()).derive({ as: "scoped" }, async ({ bearer, headers, set }) => {
    const header = headers.authorization;
    // Tokens are taken from the Authorization header only (never a query string, which gets
    // logged), with the scheme spelled "Bearer" as @elysiajs/bearer expects.
    if (header === undefined || !/^bearer(\s|$)/i.test(header)) {
      throw new Unauthorized("send Authorization: Bearer <token>", false);
    }
    if (bearer === undefined || header !== `Bearer ${bearer}` || !TOKEN_SHAPE.test(bearer)) {
      throw new Unauthorized('the Authorization header is not "Bearer <token>"', true);
    }
    const check = await auth.check(bearer);
    setIndexedBlock(set, check.indexedBlock);
    if (check.status !== "valid") {
      throw new Unauthorized(
        check.status === "revoked" ? "this token has been revoked" : "unknown token",
        true,
      );
    }
    const decision = await limiter.hit(check.tokenId);
    if (!decision.allowed) throw new RateLimited(rateLimitPerMinute, decision.retryAfterSeconds);
    return { tokenId: check.tokenId };
  });
}
