/**
 * The typed client: Eden Treaty over the app's routes (routes.ts, from api/app.ts `App`), with
 * every request going through createHttp (ETags, Retry-After), failures thrown as ApiProblem,
 * and the live view of a wallet (live-citizens.ts).
 */
import { type Treaty, treaty } from "@elysiajs/eden";
import type { DefinitionBase, Elysia, MetadataBase, SingletonBase } from "elysia";
import { createHttp, type Fetch } from "./http.ts";
import { type LiveCitizens, type WatchOptions, watchCitizens } from "./live-citizens.ts";
import { problemOf } from "./problem.ts";
import type { Routes } from "./routes.ts";
import type {
  Citizen,
  CitizenPage,
  CitizenType,
  ListOptions,
  S1Citizen,
  S2Citizen,
} from "./types.ts";

/** The app as Eden Treaty sees it: an Elysia type carrying the routes and nothing else. */
type App = Elysia<"", SingletonBase, DefinitionBase, MetadataBase, Routes>;

/** The raw Treaty client: a typed call for every route of the API. */
export type Api = Treaty.Create<App>;

export interface ClientOptions {
  /** The API's origin, e.g. `https://api.example.com` (no trailing path). */
  baseUrl: string;
  /** A bearer token (`citizen-staking token create`). */
  token: string;
  /** The fetch underneath (the global one by default). */
  fetch?: Fetch;
  /** 429s waited out in a row before one is thrown. */
  rateLimitRetries?: number;
}

/** An Eden Treaty answer: its data, or the error Eden made of a non-2xx status. */
interface TreatyAnswer<Data> {
  data: Data | null;
  error: { status: unknown; value: unknown } | null;
}

/** The data of an answer, or its problem thrown as ApiProblem. */
function unwrap<Data>(answer: TreatyAnswer<Data>): Data {
  if (answer.error !== null) {
    const { status, value } = answer.error;
    // Eden reports a fetch that failed outright (no answer) as 503 with the cause as value.
    if (value instanceof Error) throw value;
    throw problemOf(typeof status === "number" ? status : 0, value);
  }
  return answer.data as Data;
}

/** Wire types: the schemas' bigint ids arrive as JSON numbers. */
const asWire = <T>(value: unknown) => value as T;

/** Options of one citizen's read: `block` answers as of that past block. */
export interface CitizenOptions {
  block?: number | bigint;
}

export interface StakingClient {
  /** The raw Eden Treaty client, typed from the app, for anything the helpers do not cover. */
  api: Api;
  /** One citizen staked by `address`; throws ApiProblem (404) when it is not. */
  citizen(
    type: "s1",
    id: string | number | bigint,
    address: string,
    options?: CitizenOptions,
  ): Promise<S1Citizen>;
  citizen(
    type: "s2",
    id: string | number | bigint,
    address: string,
    options?: CitizenOptions,
  ): Promise<S2Citizen>;
  /** One page of the listing. */
  list(address: string, options?: ListOptions): Promise<CitizenPage>;
  /** Every citizen the listing holds for the address (all pages, 100 at a time). */
  listAll(address: string, options?: Omit<ListOptions, "cursor" | "limit">): Promise<Citizen[]>;
  /** The address's staked citizens, kept current from the live stream. */
  watch(address: string, options?: WatchOptions): LiveCitizens;
}

export function createStakingClient(options: ClientOptions): StakingClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const http = createHttp({ fetch: options.fetch, rateLimitRetries: options.rateLimitRetries });
  const api = treaty<App>(baseUrl, {
    fetcher: http as typeof fetch,
    headers: { authorization: `Bearer ${options.token}` },
    // Names and other strings stay strings.
    parseDate: false,
  });
  const citizens = api.v1.staking.citizens;
  const blockOf = (block: number | bigint | undefined) =>
    block === undefined ? undefined : block.toString();

  async function citizen(
    type: "s1",
    id: string | number | bigint,
    address: string,
    options?: CitizenOptions,
  ): Promise<S1Citizen>;
  async function citizen(
    type: "s2",
    id: string | number | bigint,
    address: string,
    options?: CitizenOptions,
  ): Promise<S2Citizen>;
  async function citizen(
    type: CitizenType,
    id: string | number | bigint,
    address: string,
    { block }: CitizenOptions = {},
  ): Promise<Citizen> {
    const query = { address, block: blockOf(block) };
    const params = { id: id.toString() };
    return asWire<Citizen>(
      unwrap(
        type === "s1"
          ? await citizens.s1(params).get({ query })
          : await citizens.s2(params).get({ query }),
      ),
    );
  }

  async function list(address: string, options: ListOptions = {}): Promise<CitizenPage> {
    const { block, limit, ...rest } = options;
    const query = {
      address,
      ...rest,
      block: blockOf(block),
      limit: limit === undefined ? undefined : String(limit),
    };
    return asWire<CitizenPage>(unwrap(await citizens.get({ query })));
  }

  async function listAll(
    address: string,
    options: Omit<ListOptions, "cursor" | "limit"> = {},
  ): Promise<Citizen[]> {
    const all: Citizen[] = [];
    let cursor: string | undefined;
    do {
      const page = await list(address, { ...options, limit: 100, cursor });
      all.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return all;
  }

  return {
    api,
    citizen,
    list,
    listAll,
    watch(address: string, watchOptions: WatchOptions = {}): LiveCitizens {
      return watchCitizens({
        baseUrl,
        token: options.token,
        address,
        fetch: options.fetch,
        ...watchOptions,
      });
    },
  };
}
