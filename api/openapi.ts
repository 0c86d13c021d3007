/**
 * The response objects of the OpenAPI document for the protected endpoints, built from the same
 * `t` schemas the code uses: the 200 body, the 304 of a conditional GET, and every problem as
 * `application/problem+json`, each with the headers it carries. Declared by hand because Elysia's
 * generator labels every body `application/json` and documents no response headers.
 */
import type { TSchema } from "elysia";
import { INDEXED_BLOCK_HEADER } from "./indexed-block.ts";
import { ProblemSchema } from "./problems.ts";

const text = (description: string) => ({ description, schema: { type: "string" as const } });

const HEADERS = {
  indexedBlock: {
    [INDEXED_BLOCK_HEADER]: {
      description: "the indexed block the data reflects (absent before the first checkpoint)",
      schema: { type: "string" as const, pattern: "^[0-9]+$" },
    },
  },
  caching: {
    etag: text(
      "the data version and the resource (for an as-of answer at a final block: the block, the resource and the body); send it back as If-None-Match",
    ),
    "cache-control": text(
      '"private, no-cache" on every answer: keep it, but ask again (a 304 while unchanged); as-of answers at final blocks too, since they carry the current name and image',
    ),
  },
  retryAfter: {
    "retry-after": {
      description: "seconds to wait before trying again",
      schema: { type: "integer" as const, minimum: 1 },
    },
  },
  authenticate: {
    "www-authenticate": text('"Bearer", or "Bearer error=\\"invalid_token\\"" when one was sent'),
  },
};

const PROBLEMS: Record<number, { description: string; headers: Record<string, object> }> = {
  400: {
    description:
      "a parameter is missing or malformed, or `block` is outside the indexed range (the detail says which blocks are available); `parameter` names it",
    headers: {},
  },
  401: {
    description: "no usable bearer token: missing, another scheme, unknown or revoked",
    headers: HEADERS.authenticate,
  },
  404: {
    description: "the citizen is not staked by that address (after block N, with ?block=N)",
    headers: {},
  },
  429: { description: "this token is over its rate limit", headers: HEADERS.retryAfter },
  503: { description: "the database cannot be reached; retry", headers: HEADERS.retryAfter },
};

/** `extraHeaders`: an endpoint's own response headers, each a `t` schema with a description. */
export function okResponse(schema: TSchema, extraHeaders: Record<string, TSchema> = {}) {
  const extra = Object.fromEntries(
    Object.entries(extraHeaders).map(([name, header]) => [
      name,
      { description: header.description, schema: header },
    ]),
  );
  const headers = { ...HEADERS.indexedBlock, ...HEADERS.caching, ...extra };
  return {
    200: {
      description: "the data as of the indexed block, or as of ?block=N when given",
      headers,
      content: { "application/json": { schema } },
    },
    304: {
      description: "If-None-Match holds the current ETag: nothing changed, no body",
      headers,
    },
  };
}

export function problemResponses(...statuses: (keyof typeof PROBLEMS)[]) {
  return Object.fromEntries(
    statuses.map((status) => {
      const problem = PROBLEMS[status]!;
      return [
        status,
        {
          description: problem.description,
          headers: { ...HEADERS.indexedBlock, ...problem.headers },
          content: { "application/problem+json": { schema: ProblemSchema } },
        },
      ];
    }),
  );
}
