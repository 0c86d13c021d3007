import { hostname } from "node:os";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import * as schema from "./schema.ts";

export interface DatabaseOptions {
  /** Connections in the pool. */
  max?: number;
  /** Seconds to wait for a connection before a query fails (the API turns that into a 503). */
  connectTimeout?: number;
}

/**
 * Each process's pool names itself to Postgres, so pg_stat_activity tells its connections apart
 * (the API's pool metrics read it).
 */
const APPLICATION_NAME = `citizen-staking-${hostname()}-${process.pid}`;

export function createDatabase(url: string, options: DatabaseOptions = {}) {
  const client = postgres(url, {
    max: options.max ?? 4,
    connect_timeout: options.connectTimeout ?? 10,
    onnotice: () => {},
    connection: { application_name: APPLICATION_NAME },
  });
  const db = drizzle(client, { schema });
  return { db, client, close: () => client.end({ timeout: 5 }) };
}

export type Database = ReturnType<typeof createDatabase>["db"];
