/** The three citizen endpoints of API-CONTRACT.md. */
import { Elysia } from "elysia";
import type { StakedCitizen } from "../../../db/schema.ts";
import { exactJson } from "../../exact-json.ts";
import {
  CACHE_CONTROL,
  etagFor,
  IMMUTABLE_CACHE_CONTROL,
  immutableEtagFor,
  noneMatch,
} from "../../http-cache.ts";
import { okResponse, problemResponses } from "../../openapi.ts";
import { BadParameter, CitizenNotStaked } from "../../problems.ts";
import type { ResponseCache } from "../../response-cache.ts";
import { type Admit, authentication } from "../auth/index.ts";
import type { TokenCheck, TokenService } from "../auth/token.ts";
import { decodeCursor, encodeCursor, isUint256 } from "./cursor.ts";
import { type History, judgeBlock } from "./history.ts";
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
import { type ImageTemplates, toRecord, toS1Record, toS2Record } from "./record.ts";
import { type CitizensService, sortKeyLength, sortKeyOf } from "./service.ts";

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
 * whether that body is final (as of a block at or below the finality boundary).
 */
interface Read {
  token: TokenCheck;
  render(): { body: string; final: boolean };
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
   * With `at` (?block=N), an answer for a final block has an ETag naming the block, which holds
   * at every later version; other as-of answers go by the data version like current ones.
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
      // An ETag naming the block was only ever given with a 200 for a final block: it holds.
      if (at !== undefined) {
        const final = immutableEtagFor(at, resource);
        if (noneMatch(ifNoneMatch, final, false)) return notModified(set, final, at, true);
      }
      const etag = etagFor(check.version, resource);
      // An ETag of this version and resource was only ever given with a 200, so it exists.
      if (noneMatch(ifNoneMatch, etag, false)) return notModified(set, etag, at, false);
      if (cached !== undefined && (cached.final || cached.version === check.version)) {
        const final = cached.final === true;
        // A cached body means the resource exists at this version: `*` matches it too.
        if (noneMatch(ifNoneMatch, cached.etag, true))
          return notModified(set, cached.etag, at, final);
        return ok(set, cached.etag, cached.body, at, final);
      }
    }
    const fresh = await read();
    admit(fresh.token, set, !counted);
    const { body, final } = fresh.render();
    const etag =
      final && at !== undefined
        ? immutableEtagFor(at, resource)
        : etagFor(fresh.token.version, resource);
    cache.put(resource, { version: fresh.token.version, etag, body, final });
    if (noneMatch(ifNoneMatch, etag, true)) return notModified(set, etag, at, final);
    return ok(set, etag, body, at, final);
  }

  /**
   * Judges ?block=N against the range the statement read (400 outside it) and marks the answer,
   * a 404 included, with the block it reflects. Answers whether N is final.
   */
  function asOf(set: Context["set"], at: bigint, history: History): boolean {
    const { final } = judgeBlock(at, history);
    set.headers[AS_OF_BLOCK_HEADER] = at.toString();
    return final;
  }

  function findCitizen(
    context: Context,
    type: CitizenType,
    id: string,
    query: { address: string; block?: string },
  ) {
    // The schema admits 1 to 78 digits; the last step to uint256 is a comparison.
    if (!isUint256(id)) {
      throw new BadParameter("id", `id: ${CitizenParams.properties.id.description}`);
    }
    const citizenId = BigInt(id);
    const { address } = query;
    const owner = address.toLowerCase();
    const at = query.block === undefined ? undefined : BigInt(query.block);
    const toBody = (citizen: StakedCitizen | null, when: string) => {
      if (!citizen) {
        throw new CitizenNotStaked(
          `${type} citizen ${citizenId} is not staked by ${address}${when}`,
        );
      }
      return exactJson(type === "s1" ? toS1Record(citizen, images) : toS2Record(citizen, images));
    };
    if (at === undefined) {
      return answer(context, `${type}/${citizenId}?${owner}`, async () => {
        const found = await citizens.find(context.tokenHash, type, citizenId, owner);
        return {
          token: found.token,
          render: () => ({ body: toBody(found.citizen, ""), final: false }),
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
            const final = asOf(context.set, at, found.history);
            return { body: toBody(found.citizen, ` after block ${at}`), final };
          },
        };
      },
      at,
    );
  }

  const emptyId = () => {
    throw new BadParameter("id", "the citizen id is missing");
  };

  return new Elysia({ prefix: CITIZENS_PREFIX })
    .use(authentication())
    .get("/s1/:id", (context) => findCitizen(context, "s1", context.params.id, context.query), {
      params: CitizenParams,
      query: CitizenQuery,
      detail: detail("One S1 citizen staked by an address", S1Record),
    })
    .get("/s2/:id", (context) => findCitizen(context, "s2", context.params.id, context.query), {
      params: CitizenParams,
      query: CitizenQuery,
      detail: detail("One S2 citizen staked by an address", S2Record),
    })
    .get("/s1/", emptyId, { detail: { hide: true } })
    .get("/s2/", emptyId, { detail: { hide: true } })
    .get(
      "",
      (context) => {
        const { query } = context;
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
        const toBody = (page: { citizens: StakedCitizen[]; more: boolean }) => {
          const last = page.citizens.at(-1);
          return exactJson({
            items: page.citizens.map((row) => toRecord(row, images)),
            nextCursor: page.more && last ? encodeCursor(sort, order, sortKeyOf(last, sort)) : null,
          });
        };
        if (at === undefined) {
          return answer(context, resource, async () => {
            const page = await citizens.list(context.tokenHash, request);
            return { token: page.token, render: () => ({ body: toBody(page), final: false }) };
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
                const final = asOf(context.set, at, page.history);
                return { body: toBody(page), final };
              },
            };
          },
          at,
        );
      },
      {
        query: ListQuery,
        detail: detail("The citizens an address has staked, a page at a time", CitizenPage),
      },
    );
}

/** The validators of a 200 or 304; with `at`, the block the answer reflects. */
function validators(set: Context["set"], etag: string, at: bigint | undefined, final: boolean) {
  set.headers.etag = etag;
  set.headers["cache-control"] = final ? IMMUTABLE_CACHE_CONTROL : CACHE_CONTROL;
  if (at !== undefined) set.headers[AS_OF_BLOCK_HEADER] = at.toString();
}

function ok(
  set: Context["set"],
  etag: string,
  body: string,
  at: bigint | undefined,
  final: boolean,
) {
  set.headers["content-type"] = "application/json";
  validators(set, etag, at, final);
  return body;
}

function notModified(set: Context["set"], etag: string, at: bigint | undefined, final: boolean) {
  set.status = 304;
  validators(set, etag, at, final);
  return new Response(null, { status: 304 });
}
