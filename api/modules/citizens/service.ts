/**
 * Reads of staked citizens: one prepared statement per request, which also checks the request's
 * token and answers the indexed block and data version (one round trip).
 */
import { and, asc, desc, eq, type SQL, sql } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { type StakedCitizen, stakedCitizens } from "../../../db/schema.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import { fromDatabase } from "../../problems.ts";
import { judgeToken, tokenSource } from "../auth/token.ts";
import type { CitizenType, Order, Sort } from "./model.ts";

const SEASONS: Record<CitizenType, number> = { s1: 1, s2: 2 };

/** The sort column, then the tie-breakers (type, then id): a total order over a wallet's rows. */
const SORT_KEYS = {
  id: [stakedCitizens.citizenId, stakedCitizens.season],
  totalPoints: [stakedCitizens.totalPoints, stakedCitizens.season, stakedCitizens.citizenId],
  endTime: [stakedCitizens.timelockEndTime, stakedCitizens.season, stakedCitizens.citizenId],
} as const;

export function sortKeyLength(sort: Sort): number {
  return SORT_KEYS[sort].length;
}

export function sortKeyOf(row: StakedCitizen, sort: Sort): bigint[] {
  const values = { id: row.citizenId, totalPoints: row.totalPoints, endTime: row.timelockEndTime };
  const season = BigInt(row.season);
  return sort === "id" ? [row.citizenId, season] : [values[sort], season, row.citizenId];
}

export interface ListRequest {
  /** Lowercase. */
  address: string;
  type?: CitizenType;
  sort: Sort;
  order: Order;
  limit: number;
  /** Sort key values (decimal strings) of the last item already seen. */
  after?: string[];
}

export function createCitizensService(db: Database) {
  const checkpoint = indexedBlockSource(db);
  const token = tokenSource(db);
  const head = {
    indexedBlock: checkpoint.indexedBlock,
    version: checkpoint.version,
    tokenId: token.tokenId,
    tokenHash: token.tokenHash,
    revoked: token.revoked,
  };

  const one = db
    .with(checkpoint, token)
    .select({ ...head, citizen: stakedCitizens })
    .from(checkpoint)
    .leftJoin(token, sql`true`)
    .leftJoin(
      stakedCitizens,
      and(
        eq(stakedCitizens.season, sql.placeholder("season")),
        eq(stakedCitizens.citizenId, sql.placeholder("id")),
        eq(stakedCitizens.staker, sql.placeholder("address")),
      ),
    )
    .prepare("staked_citizen");

  // Keyset pagination: every key column runs the same direction, so "after the cursor" is a
  // single row comparison the (staker, key..., season, id) indexes can serve.
  function prepareList(type: CitizenType | undefined, sort: Sort, order: Order, paged: boolean) {
    const keys = SORT_KEYS[sort];
    const conditions: SQL[] = [eq(stakedCitizens.staker, sql.placeholder("address"))];
    if (type) conditions.push(eq(stakedCitizens.season, SEASONS[type]));
    if (paged) {
      const bound = keys.map((_, index) => sql.placeholder(`k${index}`));
      conditions.push(
        sql`(${sql.join([...keys], sql`, `)}) ${order === "asc" ? sql`>` : sql`<`} (${sql.join(bound, sql`, `)})`,
      );
    }
    return db
      .with(checkpoint, token)
      .select({ ...head, citizen: stakedCitizens })
      .from(checkpoint)
      .leftJoin(token, sql`true`)
      .leftJoin(stakedCitizens, and(...conditions))
      .orderBy(...keys.map((column) => (order === "asc" ? asc(column) : desc(column))))
      .limit(sql.placeholder("limit"))
      .prepare(`staked_citizens_${type ?? "all"}_${sort}_${order}_${paged ? "after" : "first"}`);
  }

  const lists = new Map<string, ReturnType<typeof prepareList>>();
  function listStatement(type: CitizenType | undefined, sort: Sort, order: Order, paged: boolean) {
    const name = `${type}:${sort}:${order}:${paged}`;
    let statement = lists.get(name);
    if (!statement) {
      statement = prepareList(type, sort, order, paged);
      lists.set(name, statement);
    }
    return statement;
  }

  return {
    /** The token check, and the citizen while `address` (lowercase) has it staked. */
    async find(tokenHash: string, type: CitizenType, id: bigint, address: string) {
      const [row] = await fromDatabase(
        one.execute({ hash: tokenHash, season: SEASONS[type], id: id.toString(), address }),
      );
      return { token: judgeToken(row, tokenHash), citizen: row?.citizen ?? null };
    },

    /** The token check, up to `limit` citizens after the cursor key, and whether more follow. */
    async list(tokenHash: string, request: ListRequest) {
      const statement = listStatement(
        request.type,
        request.sort,
        request.order,
        request.after !== undefined,
      );
      const params: Record<string, unknown> = {
        hash: tokenHash,
        address: request.address,
        limit: request.limit + 1,
      };
      request.after?.forEach((value, index) => {
        params[`k${index}`] = value;
      });
      const rows = await fromDatabase(statement.execute(params));
      const citizens = rows.flatMap((row) => (row.citizen ? [row.citizen] : []));
      return {
        token: judgeToken(rows[0], tokenHash),
        citizens: citizens.slice(0, request.limit),
        more: citizens.length > request.limit,
      };
    },
  };
}

export type CitizensService = ReturnType<typeof createCitizensService>;
