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
export const APPLICATION_NAME = `citizen-staking-${hostname()}-${process.pid}`;

/**
 * Seconds before a dropped connection is opened again. postgres.js's own backoff grows with
 * every connection lost since the last good one (3^n / 100 s, up to 20 s) and spans the whole
 * pool, so one outage that drops four connections twice kept a process from Postgres for up to
 * 20 s after it was back: the follower blind while reorgs went by. Capped at one second.
 */
export function reconnectDelaySeconds(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1);
}

export function createDatabase(url: string, options: DatabaseOptions = {}) {
  const client = postgres(url, {
    max: options.max ?? 4,
    connect_timeout: options.connectTimeout ?? 10,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    connection: { application_name: APPLICATION_NAME },
  });
  const db = drizzle(client, { schema });
  return { db, client, close: () => client.end({ timeout: 5 }) };
}

export type Database = ReturnType<typeof createDatabase>["db"];
