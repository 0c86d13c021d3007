/** The three citizen endpoints (docs/dashboards.md, fields in docs/api-fields.md). */
import { Elysia } from "elysia";
import { CACHE_CONTROL, etagFor, finalEtagFor, noneMatch } from "../../http-cache.ts";
import { okResponse, problemResponses } from "../../openapi.ts";
import { BadParameter, CitizenNotStaked } from "../../problems.ts";
import { refuseUnexpectedParameters } from "../../query-parameters.ts";
import type { ResponseCache } from "../../response-cache.ts";
import { type Admit, authentication } from "../auth/index.ts";
import type { TokenCheck, TokenService } from "../auth/token.ts";
import { canonicalDigits, decodeCursor, encodeCursor, isUint256 } from "./cursor.ts";
import { type History, judgeBlock } from "./history.ts";
import { type SortKeyRow, sortKeyLength, sortKeyOf } from "./keyset.ts";
import {
  AS_OF_BLOCK_HEADER,
  AsOfBlockHeader,
  CitizenPage,
  CitizenParams,
  CitizenQuery,
  type CitizenType,
  ListQuery,
  S1Record,
  S2Record,
} from "./model.ts";
import { type ImageTemplates, recordJson, s1RecordJson, s2RecordJson } from "./record.ts";
import type { CitizensService, ReadCitizen } from "./service.ts";

export const CITIZENS_PREFIX = "/v1/staking/citizens";

export interface CitizensDependencies {
  citizens: CitizensService;
  tokens: TokenService;
  admit: Admit;
  cache: ResponseCache;
  images: ImageTemplates;
}

const DEFAULT_LIMIT = 25;

const detail = (summary: string, ok: Parameters<typeof okResponse>[0]) => ({
  summary,
  tags: ["citizens"],
  security: [{ bearer: [] }],
  responses: {
    ...okResponse(ok, { [AS_OF_BLOCK_HEADER]: AsOfBlockHeader }),
    ...problemResponses(400, 401, 404, 429, 503),
  },
});

/**
 * What one statement read: the token check, and the body it renders (or a thrown problem), with
 * the block it is final at (an as-of block at or below the finality boundary).
 */
interface Read {
  token: TokenCheck;
  render(): { body: string; finalAt?: bigint };
}

type Context = {
  request: Request;
  set: { headers: Record<string, unknown>; status?: number | string };
  tokenHash: string;
};

export function citizensModule({ citizens, tokens, admit, cache, images }: CitizensDependencies) {
  /**
   * Answers a read at the current data version: 304 when If-None-Match holds its ETag, a cached
   * body when one was made at that version, else the full read. The first two need only the
   * token check (one small round trip); the full read checks the token in its own statement.
   * An answer as of a final block has an ETag of its block and body (finalEtagFor), so only its
   * body, cached at this version or read afresh, can tell whether an old ETag still holds.
   */
  async function answer(
    context: Context,
    resource: string,
    read: () => Promise<Read>,
    at?: bigint,
  ) {
    const { request, set } = context;
    const ifNoneMatch = request.headers.get("if-none-match");
    const cached = cache.get(resource);
    let counted = false;
    if (cached !== undefined || ifNoneMatch !== null) {
      const check = await tokens.check(context.tokenHash);
      admit(check, set);
      counted = true;
      // An ETag of this version and resource was only ever given with a 200, so it exists.
      if (ifNoneMatch !== null) {
        const etag = etagFor(check.version, resource);
        if (noneMatch(ifNoneMatch, etag, false)) return notModified(set, etag, at);
      }
      // A body of another version may be stale (metadata refreshed, a reorg): never served.
      if (cached !== undefined && cached.version === check.version) {
        // A cached body means the resource exists at this version: `*` matches it too.
        if (noneMatch(ifNoneMatch, cached.etag, true)) return notModified(set, cached.etag, at);
        return ok(set, cached.etag, cached.body, at);
      }
    }
    const fresh = await read();
    admit(fresh.token, set, !counted);
    const { body, finalAt } = fresh.render();
    const etag =
      finalAt === undefined
        ? etagFor(fresh.token.version, resource)
        : finalEtagFor(finalAt, resource, body);
    cache.put(resource, { version: fresh.token.version, etag, body });
    if (noneMatch(ifNoneMatch, etag, true)) return notModified(set, etag, at);
    return ok(set, etag, body, at);
  }

  /**
   * Judges ?block=N against the range the statement read (400 outside it) and marks the answer,
   * a 404 included, with the block it reflects. Answers N when it is final.
   */
  function asOf(set: Context["set"], at: bigint, history: History): bigint | undefined {
    const { final } = judgeBlock(at, history);
    set.headers[AS_OF_BLOCK_HEADER] = at.toString();
    return final ? at : undefined;
  }

  function findCitizen(
    context: Context,
    type: CitizenType,
    id: string,
    query: { address: string; block?: string },
  ) {
    // The schema admits any digits; the last step to uint256 is a comparison.
    if (!isUint256(id)) {
      throw new BadParameter("id", `id: ${CitizenParams.properties.id.description}`);
    }
    const citizenId = canonicalDigits(id);
    const { address } = query;
    const owner = address.toLowerCase();
    const at = query.block === undefined ? undefined : BigInt(query.block);
    const toBody = (citizen: ReadCitizen<undefined> | null, when: string) => {
      if (!citizen) {
        throw new CitizenNotStaked(
          `${type} citizen ${citizenId} is not staked by ${address}${when}`,
        );
      }
      if (citizen.record !== undefined) return citizen.record;
      const { row } = citizen;
      return type === "s1" ? s1RecordJson(row, images) : s2RecordJson(row, images);
    };
    if (at === undefined) {
      return answer(context, `${type}/${citizenId}?${owner}`, async () => {
        const found = await citizens.find(context.tokenHash, type, citizenId, owner);
        return {
          token: found.token,
          render: () => ({ body: toBody(found.citizen, "") }),
        };
      });
    }
    return answer(
      context,
      `${type}/${citizenId}?${owner}@${at}`,
      async () => {
        const found = await citizens.findAt(context.tokenHash, type, citizenId, owner, at);
        return {
          token: found.token,
          render() {
            const finalAt = asOf(context.set, at, found.history);
            return { body: toBody(found.citizen, ` after block ${at}`), finalAt };
          },
        };
      },
      at,
    );
  }

  const emptyId = () => {
    throw new BadParameter("id", "the citizen id is missing");
  };

  // Handlers name the context's parts they use: Elysia then prepares only those per request
  // (a handler taking the whole context gets cookies parsed too).
  return new Elysia({ prefix: CITIZENS_PREFIX })
    .use(authentication())
    .get(
      "/s1/:id",
      ({ params, query, request, set, tokenHash }) =>
        findCitizen({ request, set, tokenHash }, "s1", params.id, query),
      {
        params: CitizenParams,
        query: CitizenQuery,
        transform: refuseUnexpectedParameters(CitizenQuery),
        detail: detail("One S1 citizen staked by an address", S1Record),
      },
    )
    .get(
      "/s2/:id",
      ({ params, query, request, set, tokenHash }) =>
        findCitizen({ request, set, tokenHash }, "s2", params.id, query),
      {
        params: CitizenParams,
        query: CitizenQuery,
        transform: refuseUnexpectedParameters(CitizenQuery),
        detail: detail("One S2 citizen staked by an address", S2Record),
      },
    )
    .get("/s1/", emptyId, { detail: { hide: true } })
    .get("/s2/", emptyId, { detail: { hide: true } })
    .get(
      "",
      ({ query, request: httpRequest, set, tokenHash }) => {
        const context = { request: httpRequest, set, tokenHash };
        const sort = query.sort ?? "id";
        const order = query.order ?? "asc";
        const after =
          query.cursor === undefined
            ? undefined
            : decodeCursor(query.cursor, sort, order, sortKeyLength(sort));
        const request = {
          address: query.address.toLowerCase(),
          type: query.type,
          sort,
          order,
          limit: query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit),
          after,
        };
        const at = query.block === undefined ? undefined : BigInt(query.block);
        const resource = `list?${request.address}&${request.type ?? ""}&${sort}&${order}&${request.limit}&${query.cursor ?? ""}${at === undefined ? "" : `@${at}`}`;
        const toBody = (page: { citizens: ReadCitizen<SortKeyRow>[]; more: boolean }) => {
          const last = page.citizens.at(-1);
          const items = page.citizens
            .map((citizen) =>
              citizen.record !== undefined ? citizen.record : recordJson(citizen.row, images),
            )
            .join(",");
          const nextCursor =
            page.more && last
              ? JSON.stringify(encodeCursor(sort, order, sortKeyOf(last.row, sort)))
              : "null";
          return `{"items":[${items}],"nextCursor":${nextCursor}}`;
        };
        if (at === undefined) {
          return answer(context, resource, async () => {
            const page = await citizens.list(context.tokenHash, request);
            return { token: page.token, render: () => ({ body: toBody(page) }) };
          });
        }
        return answer(
          context,
          resource,
          async () => {
            const page = await citizens.listAt(context.tokenHash, request, at);
            return {
              token: page.token,
              render() {
                const finalAt = asOf(context.set, at, page.history);
                return { body: toBody(page), finalAt };
              },
            };
          },
          at,
        );
      },
      {
        query: ListQuery,
        transform: refuseUnexpectedParameters(ListQuery),
        detail: detail("The citizens an address has staked, a page at a time", CitizenPage),
      },
    );
}

/** The validators of a 200 or 304; with `at`, the block the answer reflects. */
function validators(set: Context["set"], etag: string, at: bigint | undefined) {
  set.headers.etag = etag;
  set.headers["cache-control"] = CACHE_CONTROL;
  if (at !== undefined) set.headers[AS_OF_BLOCK_HEADER] = at.toString();
}

function ok(set: Context["set"], etag: string, body: string, at: bigint | undefined) {
  set.headers["content-type"] = "application/json";
  validators(set, etag, at);
  return body;
}

function notModified(set: Context["set"], etag: string, at: bigint | undefined) {
  set.status = 304;
  validators(set, etag, at);
  return new Response(null, { status: 304 });
}
