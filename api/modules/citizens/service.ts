/**
 * Reads of staked citizens: one prepared statement per request, which also checks the request's
 * token and answers the indexed block and data version (one round trip). An as-of read (`at`)
 * reads the same columns from `staked_citizens_of_wallet_at(block, wallet)` (db/functions/: index
 * lookups in the staked-citizen history, inlined into the statement) instead of the table, and
 * its statement also answers the available range and the finality boundary.
 *
 * A current-state read answers the record stored with the row (staked_citizens.record, written by
 * the projection) when it is this writer's, and reads only that; a row without one (written
 * otherwise, or by another writer) is read whole and rendered, in a second statement. An as-of
 * read, or a type with an image template, reads rows to render.
 */
import { and, eq, getTableColumns, type SQL, sql } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { stakedCitizens } from "../../../db/schema.ts";
import { SEASON_OF_TYPE } from "../../../lib/vocabulary.ts";
import { indexedBlockSource } from "../../indexed-block.ts";
import { fromDatabase } from "../../problems.ts";
import { type Raw, rawStatement } from "../../raw-statement.ts";
import type { Reads } from "../../reads.ts";
import { judgeToken, tokenSource } from "../auth/token.ts";
import { blockParameter, type History, historySource } from "./history.ts";
import { pageConditions, type SortKeyRow } from "./keyset.ts";
import type { CitizenType, Order, Sort } from "./model.ts";
import { type CitizenRow, RECORD_WRITER } from "./record.ts";

/**
 * A citizen as read: its stored record (the JSON text the API answers), or its whole row to
 * render one from. A listed citizen also carries the columns of its sort key.
 */
export type ReadCitizen<Key = object> =
  | { record: string; row: Key }
  | { record?: undefined; row: CitizenRow };

/** Which types answer stored records: those without an image template (record.ts). */
export type StoredRecords = Record<CitizenType, boolean>;

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

/** `db` builds the statements (drizzle); `reads` runs them (api/reads.ts). */
export function createCitizensService(
  db: Database,
  reads: Reads,
  stored: StoredRecords = { s1: true, s2: true },
) {
  const checkpoint = indexedBlockSource(db);
  const token = tokenSource(db);
  const history = historySource(db);
  /**
   * The wallet's rows after the requested block (staked_citizens_of_wallet_at, db/functions/,
   * which Postgres inlines into the statement: one GiST lookup and two primary-key joins), with
   * the table's columns. The function does not check the block itself: the statement joins its
   * rows only when the block lies between the first staker event and the same statement's
   * indexed block, so no row above the checkpoint is ever answered, and out of range the caller
   * answers 400 from the range.
   */
  const asOfSource = (filter: SQL) =>
    db
      .$with("as_of", getTableColumns(stakedCitizens))
      .as(
        sql`select * from staked_citizens_of_wallet_at(${sql.placeholder("block")}::bigint, ${sql.placeholder("address")}::text) ${filter}`,
      );
  const asOf = asOfSource(sql``);
  const asOfOne = asOfSource(
    sql`where season = ${sql.placeholder("season")}::smallint and citizen_id = ${sql.placeholder("id")}::numeric`,
  );
  const inRange = sql`${sql.placeholder("block")}::bigint between ${history.firstBlock} and ${checkpoint.indexedBlock}`;
  // The CTE's columns under the table's keys (same names and decoders), each qualified by
  // "as_of"; the proxy has no own keys to spread, hence the map over the table's.
  const asOfRows = Object.fromEntries(
    Object.keys(getTableColumns(stakedCitizens)).map((key) => [
      key,
      asOf[key as keyof typeof asOf._.selectedFields],
    ]),
  ) as typeof asOf._.selectedFields;
  const historyFields = { firstBlock: history.firstBlock, finalizedBlock: history.finalizedBlock };
  const head = {
    indexedBlock: checkpoint.indexedBlock,
    version: checkpoint.version,
    tokenId: token.tokenId,
    tokenHash: token.tokenHash,
    revoked: token.revoked,
    expired: token.expired,
  };

  /** The stored record where this writer wrote it, else null. */
  const record = sql<
    string | null
  >`case when ${stakedCitizens.recordWriter} = ${RECORD_WRITER} then ${stakedCitizens.record} end`;
  /** A listing's stored records: the columns of the cursor, and the record. */
  const storedColumns = {
    season: stakedCitizens.season,
    citizenId: stakedCitizens.citizenId,
    totalPoints: stakedCitizens.totalPoints,
    timelockEndTime: stakedCitizens.timelockEndTime,
    record: record.as("record"),
  };

  // The current-state reads are the hot path: run without drizzle's per-call work.
  const oneStatement = <
    C extends typeof stakedCitizens | Pick<typeof storedColumns, "season" | "record">,
  >(
    citizen: C,
  ) =>
    db
      .with(checkpoint, token)
      .select({ ...head, citizen })
      .from(checkpoint)
      .leftJoin(token, sql`true`)
      .leftJoin(
        stakedCitizens,
        and(
          eq(stakedCitizens.season, sql.placeholder("season")),
          eq(stakedCitizens.citizenId, sql.placeholder("id")),
          eq(stakedCitizens.staker, sql.placeholder("address")),
        ),
      );
  const one = rawStatement(reads, oneStatement(stakedCitizens));
  const oneStored = rawStatement(
    reads,
    oneStatement({ season: storedColumns.season, record: storedColumns.record }),
  );

  const oneAt = rawStatement(
    reads,
    db
      .with(checkpoint, token, history, asOfOne)
      .select({ ...head, ...historyFields, citizen: asOfRows })
      .from(checkpoint)
      .leftJoin(token, sql`true`)
      .leftJoin(history, sql`true`)
      .leftJoin(asOfOne, inRange),
  );

  /** A listing statement selecting `citizen` from the wallet's rows. */
  const listOf =
    <C extends typeof stakedCitizens | typeof storedColumns>(citizen: C) =>
    (type: CitizenType | undefined, sort: Sort, order: Order, paged: boolean) => {
      const page = pageConditions(stakedCitizens, type, sort, order, paged);
      return rawStatement(
        reads,
        db
          .with(checkpoint, token)
          .select({ ...head, citizen })
          .from(checkpoint)
          .leftJoin(token, sql`true`)
          .leftJoin(
            stakedCitizens,
            and(eq(stakedCitizens.staker, sql.placeholder("address")), ...page.conditions),
          )
          .orderBy(...page.orderBy)
          .limit(sql.placeholder("limit")),
      );
    };
  const prepareList = listOf(stakedCitizens);
  const prepareListStored = listOf(storedColumns);

  function prepareListAt(type: CitizenType | undefined, sort: Sort, order: Order, paged: boolean) {
    const page = pageConditions(asOfRows, type, sort, order, paged);
    // The function already keeps the wallet's rows only.
    return rawStatement(
      reads,
      db
        .with(checkpoint, token, history, asOf)
        .select({ ...head, ...historyFields, citizen: asOfRows })
        .from(checkpoint)
        .leftJoin(token, sql`true`)
        .leftJoin(history, sql`true`)
        .leftJoin(asOf, and(inRange, ...page.conditions))
        .orderBy(...page.orderBy)
        .limit(sql.placeholder("limit")),
    );
  }

  const memo = <T>(prepare: (...key: Parameters<typeof prepareList>) => T) => {
    const statements = new Map<string, T>();
    return (...key: Parameters<typeof prepareList>) => {
      const name = key.join(":");
      let statement = statements.get(name);
      if (!statement) {
        statement = prepare(...key);
        statements.set(name, statement);
      }
      return statement;
    };
  };
  const listStatement = memo(prepareList);
  const listStoredStatement = memo(prepareListStored);
  const listAtStatement = memo(prepareListAt);

  // Raw rows carry the blocks as decimal strings.
  const block = (value: string | null | undefined) => (value == null ? null : BigInt(value));
  const historyOf = (row: Raw<History> | undefined): History => ({
    firstBlock: block(row?.firstBlock),
    indexedBlock: block(row?.indexedBlock),
    finalizedBlock: block(row?.finalizedBlock),
  });

  function listParams(tokenHash: string, request: ListRequest) {
    const params: Record<string, unknown> = {
      hash: tokenHash,
      address: request.address,
      limit: request.limit + 1,
    };
    request.after?.forEach((value, index) => {
      params[`k${index}`] = value;
    });
    return params;
  }

  function page<Citizen>(rows: { citizen: Citizen | null }[], limit: number) {
    const citizens = rows.flatMap((row) => (row.citizen ? [row.citizen] : []));
    return { citizens: citizens.slice(0, limit), more: citizens.length > limit };
  }
  const rowsOf = <Citizen>(found: { citizens: Citizen[]; more: boolean }) => ({
    citizens: found.citizens.map((row) => ({ row })),
    more: found.more,
  });

  return {
    /**
     * The token check, and the citizen (`id`: its canonical digits) while `address` (lowercase)
     * has it staked.
     */
    async find(tokenHash: string, type: CitizenType, id: string, address: string) {
      const params = { hash: tokenHash, season: SEASON_OF_TYPE[type], id, address };
      if (stored[type]) {
        const [row] = await fromDatabase(oneStored.execute(params));
        const token = judgeToken(row, tokenHash);
        if (!row?.citizen) return { token, citizen: null };
        const { record } = row.citizen;
        if (record !== null) return { token, citizen: { record, row: undefined } };
      }
      const [row] = await fromDatabase(one.execute(params));
      const citizen: ReadCitizen<undefined> | null = row?.citizen ? { row: row.citizen } : null;
      return { token: judgeToken(row, tokenHash), citizen };
    },

    /**
     * The token check, the available range (History), and the citizen if `address` had it
     * staked after block `at` (when `at` is in the range).
     */
    async findAt(tokenHash: string, type: CitizenType, id: string, address: string, at: bigint) {
      const [row] = await fromDatabase(
        oneAt.execute({
          hash: tokenHash,
          season: SEASON_OF_TYPE[type],
          id,
          address,
          block: blockParameter(at),
        }),
      );
      return {
        token: judgeToken(row, tokenHash),
        history: historyOf(row),
        citizen: row?.citizen ? { row: row.citizen } : null,
      };
    },

    /** The token check, up to `limit` citizens after the cursor key, and whether more follow. */
    async list(tokenHash: string, request: ListRequest) {
      const key = [request.type, request.sort, request.order, request.after !== undefined] as const;
      const params = listParams(tokenHash, request);
      if (request.type ? stored[request.type] : stored.s1 && stored.s2) {
        const rows = await fromDatabase(listStoredStatement(...key).execute(params));
        const found = page(rows, request.limit);
        const citizens: ReadCitizen<SortKeyRow>[] = [];
        for (const { record, ...row } of found.citizens) {
          if (record !== null) citizens.push({ record, row });
        }
        if (citizens.length === found.citizens.length) {
          return { token: judgeToken(rows[0], tokenHash), citizens, more: found.more };
        }
      }
      const rows = await fromDatabase(listStatement(...key).execute(params));
      const citizens: { citizens: ReadCitizen<SortKeyRow>[]; more: boolean } = rowsOf(
        page(rows, request.limit),
      );
      return { token: judgeToken(rows[0], tokenHash), ...citizens };
    },

    /** As `list`, as of block `at`, with the available range (History). */
    async listAt(tokenHash: string, request: ListRequest, at: bigint) {
      const statement = listAtStatement(
        request.type,
        request.sort,
        request.order,
        request.after !== undefined,
      );
      const rows = await fromDatabase(
        statement.execute({ ...listParams(tokenHash, request), block: blockParameter(at) }),
      );
      return {
        token: judgeToken(rows[0], tokenHash),
        history: historyOf(rows[0]),
        ...rowsOf(page(rows, request.limit)),
      };
    },
  };
}

export type CitizensService = ReturnType<typeof createCitizensService>;
