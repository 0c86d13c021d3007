/**
 * The client the hot read statements run on (api/raw-statement.ts): Bun's own SQL client, whose
 * protocol work and row decoding are native, where postgres.js builds each message and parses
 * each row in JavaScript. postgres.js stays the API's client for everything else: LISTEN (Bun's
 * client has none), the batched token checks, health, metrics and the stream.
 *
 * Rows come back as arrays of the driver's values: numeric and int8 as decimal strings, as
 * postgres.js gives them, so `Raw` rows read the same from either.
 */
import { SQL } from "bun";
import type postgres from "postgres";
import { APPLICATION_NAME, createDatabase } from "../db/client.ts";
import { parseDatabaseUrl } from "../lib/database-url.ts";

export interface Reads {
  /** Connections the pool may open (DB_POOL_SIZE, like postgres.js's pool beside it). */
  readonly max: number;
  /** Runs one parameterised select as a prepared statement; each row an array of values. */
  values(text: string, params: unknown[]): Promise<unknown[][]>;
  close(): Promise<void>;
}

export interface ReadsOptions {
  /** Connections in the pool. */
  max: number;
  /** Seconds to wait for a connection before a query fails (the API answers 503). */
  connectTimeout: number;
}

export function openReads(url: string, { max, connectTimeout }: ReadsOptions): Reads {
  // Bun's client takes one host: a DATABASE_URL listing the servers a promotion moves between
  // (target_session_attrs=primary) is read with postgres.js, which follows the primary.
  if (parseDatabaseUrl(url).hosts.length > 1) {
    const { client, close } = createDatabase(url, { max, connectTimeout });
    return {
      max,
      values: (text, params) =>
        client
          .unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true })
          .values(),
      close,
    };
  }
  // A connection lost in an outage is opened again by the next query that needs one.
  const sql = new SQL({
    url,
    max,
    connectionTimeout: connectTimeout,
    prepare: true,
    connection: { application_name: APPLICATION_NAME },
  });
  return {
    max,
    values: (text, params) => sql.unsafe(text, params).values() as Promise<unknown[][]>,
    close: () => sql.close({ timeout: 5 }),
  };
}
