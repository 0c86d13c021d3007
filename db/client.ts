import { hostname } from "node:os";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import * as schema from "./schema.ts";

export interface DatabaseOptions {
  /** Connections in the pool. */
  max?: number;
  /** Seconds to wait for a connection before a query fails (the API turns that into a 503). */
  connectTimeout?: number;
  /** Seconds a connection may sit unused before it is closed; unset, it stays open. */
  idleTimeout?: number;
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

/**
 * How long Postgres keeps a session of ours whose process went silent: frozen, or cut off from
 * the network, maybe in the middle of a write. Until the server ends such a session it keeps its
 * locks (the writers' advisory lock, hash claims on seam blocks), so every other writer on every
 * host waits, and by default it waits long: the kernel gives up on a silent peer after two hours
 * of keepalive, or some fifteen minutes of retransmissions. A live process whose session was
 * ended retries its write. See docs/decisions/silent-sessions.md.
 */
export const SILENT_SESSION_MS = 10_000;

/**
 * Set per session at connect (plain server settings; a pooler in front must pass them on): how
 * the server notices a silent client, each for one way of going silent.
 */
const SILENT_SESSION_SETTINGS = {
  // A frozen process: its kernel still answers, but no statement comes inside a transaction.
  // None of our transactions waits on anything but Postgres (node calls happen outside them).
  idle_in_transaction_session_timeout: SILENT_SESSION_MS,
  // A host cut off while its session is idle: keepalive probes go unanswered...
  tcp_keepalives_idle: 5,
  tcp_keepalives_interval: 1,
  tcp_keepalives_count: 5,
  // ...or while the server's answer to it goes unacknowledged.
  tcp_user_timeout: SILENT_SESSION_MS,
  // A session of the cut host still waiting for a lock gives up too, instead of taking the lock
  // as the one before it dies and holding it for another round.
  client_connection_check_interval: 1_000,
};

export function createDatabase(url: string, options: DatabaseOptions = {}) {
  const client = postgres(url, {
    max: options.max ?? 4,
    connect_timeout: options.connectTimeout ?? 10,
    ...(options.idleTimeout !== undefined && { idle_timeout: options.idleTimeout }),
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    connection: {
      application_name: APPLICATION_NAME,
      ...SILENT_SESSION_SETTINGS,
    },
  });
  const db = drizzle(client, { schema });
  return { db, client, close: () => client.end({ timeout: 5 }) };
}

export type Database = ReturnType<typeof createDatabase>["db"];
