/**
 * Statements of one transaction in one flight: sent back to back, answered in order, one round
 * trip for all of them where awaiting each costs one each. Postgres runs them in the order sent,
 * each with its own snapshot (read committed), so a statement still sees what those before it
 * did, and a lock taken by one holds for the ones after it.
 *
 * Each statement is prepared on its connection (postgres.js keeps it by its text). A statement
 * with parameters that is not asks Postgres for their types first, a round trip of its own, and
 * postgres.js holds back everything queued after it until the answer: the flight would break at
 * each. Prepared, only its first use on a connection asks. Our statements' texts are fixed (rows
 * travel as arrays, see unnest-rows.ts), so a connection keeps a handful.
 *
 * A statement that fails aborts the transaction; the ones after it fail with it, and the flight
 * rejects with the first failure (`settleOneFlight` gives each statement's outcome instead). The
 * last statements of a transaction can leave with its COMMIT (`endingWith`). See
 * docs/decisions/follower-write-flight.md.
 */
import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Database } from "../../db/client.ts";
import type { Transaction } from "./projection.ts";

/** A statement ready to send: a drizzle query's `.prepare(name)`, or `preparedSql`'s. */
export interface PreparedStatement<R = unknown> {
  execute(): Promise<R>;
}

type Results<T extends readonly PreparedStatement[]> = {
  -readonly [K in keyof T]: T[K] extends PreparedStatement<infer R> ? R : never;
};

/** Sends `statements` in array order without waiting between them; their results, in order. */
export function inOneFlight<const T extends readonly PreparedStatement[]>(
  statements: T,
): Promise<Results<T>> {
  // `execute` hands each to postgres.js before the next is started, so they go in array order.
  return Promise.all(statements.map((statement) => statement.execute())) as Promise<Results<T>>;
}

type Outcomes<T extends readonly PreparedStatement[]> = {
  -readonly [K in keyof T]: T[K] extends PreparedStatement<infer R>
    ? PromiseSettledResult<R>
    : never;
};

/**
 * inOneFlight, each statement's outcome given: what the statements before a failure found (a
 * checkpoint that moved) can explain it better than the failure does.
 */
export function settleOneFlight<const T extends readonly PreparedStatement[]>(
  statements: T,
): Promise<Outcomes<T>> {
  return Promise.allSettled(statements.map((statement) => statement.execute())) as Promise<
    Outcomes<T>
  >;
}

/** The value of a settled statement, or its failure thrown. */
export function answerOf<R>(outcome: PromiseSettledResult<R>): R {
  if (outcome.status === "rejected") throw outcome.reason;
  return outcome.value;
}

/** What a transaction's work gives back: its value, and its last statements, still unsent. */
export interface Ending<T> {
  value: T;
  last: PreparedStatement[];
}

/**
 * Runs `work` in a transaction and sends its `last` statements with the COMMIT, in one flight:
 * one round trip for both, where awaiting them first costs two. postgres.js sends the COMMIT
 * once the transaction's callback has returned; the statements started before that go ahead of
 * it on the same connection. A failing last statement aborts the transaction, and Postgres then
 * ends it at the COMMIT as a rollback, without an error of its own: the statement's failure is
 * thrown once the COMMIT is answered, so nothing of the transaction is kept or reported done.
 */
export async function endingWith<T>(
  db: Database,
  work: (tx: Transaction) => Promise<Ending<T>>,
): Promise<T> {
  let last: Promise<unknown[]> = Promise.resolve([]);
  const value = await db.transaction(async (tx) => {
    const ending = await work(tx);
    last = inOneFlight(ending.last);
    // Observed here so a failure is never unhandled; thrown below, after the COMMIT.
    last.catch(() => {});
    return ending.value;
  });
  await last;
  return value;
}

const dialect = new PgDialect();

/** Raw SQL (a function call) as a prepared statement, as `.prepare(name)` makes a query one. */
export function preparedSql(tx: Transaction, statement: SQL, name: string): PreparedStatement {
  return tx._.session.prepareQuery(dialect.sqlToQuery(statement), undefined, name, false);
}
