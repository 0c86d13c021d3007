/** The three citizen endpoints of API-CONTRACT.md. */
import { Elysia } from "elysia";
import { setIndexedBlock } from "../../indexed-block.ts";
import { BadParameter, CitizenNotStaked, ProblemSchema } from "../../problems.ts";
import { type AuthenticationDependencies, authentication } from "../auth/index.ts";
import { decodeCursor, encodeCursor, isUint256 } from "./cursor.ts";
import {
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

export interface CitizensDependencies extends AuthenticationDependencies {
  citizens: CitizensService;
  images: ImageTemplates;
}

const DEFAULT_LIMIT = 25;

const errors = {
  400: ProblemSchema,
  401: ProblemSchema,
  404: ProblemSchema,
  429: ProblemSchema,
  503: ProblemSchema,
};

const detail = (summary: string) => ({
  summary,
  tags: ["citizens"],
  security: [{ bearer: [] }],
});

export function citizensModule(deps: CitizensDependencies) {
  const { citizens, images } = deps;

  async function findCitizen(
    type: CitizenType,
    id: string,
    address: string,
    set: { headers: Record<string, unknown> },
  ) {
    // The schema admits 1 to 78 digits; the last step to uint256 is a comparison.
    if (!isUint256(id)) {
      throw new BadParameter("id", `id: ${CitizenParams.properties.id.description}`);
    }
    const found = await citizens.find(type, BigInt(id), address.toLowerCase());
    setIndexedBlock(set, found.indexedBlock);
    if (!found.citizen) {
      throw new CitizenNotStaked(`${type} citizen ${BigInt(id)} is not staked by ${address}`);
    }
    return found.citizen;
  }

  const emptyId = () => {
    throw new BadParameter("id", "the citizen id is missing");
  };

  return new Elysia({ prefix: "/v1/staking/citizens" })
    .use(authentication(deps))
    .get(
      "/s1/:id",
      async ({ params, query, set }) =>
        toS1Record(await findCitizen("s1", params.id, query.address, set), images),
      {
        params: CitizenParams,
        query: CitizenQuery,
        response: { 200: S1Record, ...errors },
        detail: detail("One S1 citizen staked by an address"),
      },
    )
    .get(
      "/s2/:id",
      async ({ params, query, set }) =>
        toS2Record(await findCitizen("s2", params.id, query.address, set), images),
      {
        params: CitizenParams,
        query: CitizenQuery,
        response: { 200: S2Record, ...errors },
        detail: detail("One S2 citizen staked by an address"),
      },
    )
    .get("/s1/", emptyId, { detail: { hide: true } })
    .get("/s2/", emptyId, { detail: { hide: true } })
    .get(
      "",
      async ({ query, set }) => {
        const sort = query.sort ?? "id";
        const order = query.order ?? "asc";
        const after =
          query.cursor === undefined
            ? undefined
            : decodeCursor(query.cursor, sort, order, sortKeyLength(sort));
        const page = await citizens.list({
          address: query.address.toLowerCase(),
          type: query.type,
          sort,
          order,
          limit: query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit),
          after,
        });
        setIndexedBlock(set, page.indexedBlock);
        const last = page.citizens.at(-1);
        return {
          items: page.citizens.map((row) => toRecord(row, images)),
          nextCursor: page.more && last ? encodeCursor(sort, order, sortKeyOf(last, sort)) : null,
        };
      },
      {
        query: ListQuery,
        response: { 200: CitizenPage, ...errors },
        detail: detail("The citizens an address has staked, a page at a time"),
      },
    );
}
