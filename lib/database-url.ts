/**
 * Postgres URLs as libpq and postgres.js read them, where the host part may list several
 * `host:port` pairs: `postgres://user@db1:5432,db2:5432/name?target_session_attrs=primary`, the
 * way a client follows a promoted standby (docs/decisions/postgres-promotion.md). The WHATWG
 * `URL` refuses such a host part, so every place that reads or rewrites a database URL goes
 * through here.
 */

/** The settings of `target_session_attrs` postgres.js knows. */
export const TARGET_SESSION_ATTRS = [
  "any",
  "read-write",
  "read-only",
  "primary",
  "standby",
  "prefer-standby",
] as const;

/** What the URL given is not: its message says how, never the URL itself (it holds secrets). */
export class DatabaseUrlInvalid extends Error {
  override name = "DatabaseUrlInvalid";
}

const PARTS = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/is;

export interface DatabaseUrl {
  /** `host:port` (or `host`) of each server, in the order the client tries them. */
  hosts: string[];
  /** The same URL with the first host only, as `URL` reads it: user, password, path, query. */
  first: URL;
  /** The database named in the path (empty when none is). */
  database: string;
  /** `target_session_attrs` from the query, when given. */
  targetSessionAttrs?: string;
}

export function parseDatabaseUrl(url: string): DatabaseUrl {
  const parts = PARTS.exec(url);
  if (!parts) throw new DatabaseUrlInvalid("is not a URL");
  const [, scheme, user = "", hostList = "", rest = ""] = parts;
  const hosts = hostList.split(",");
  if (hosts.some((host) => host === "")) throw new DatabaseUrlInvalid("has an empty host");
  let first: URL;
  try {
    first = new URL(`${scheme}${user}${hosts[0]}${rest}`);
    // Each further host must read as a host too (a port that is a number, no stray character).
    for (const host of hosts.slice(1)) new URL(`${scheme}${host}`);
  } catch {
    throw new DatabaseUrlInvalid("is not a URL");
  }
  return {
    hosts,
    first,
    database: decodeURIComponent(first.pathname.replace(/^\//, "")),
    targetSessionAttrs: first.searchParams.get("target_session_attrs") ?? undefined,
  };
}

/** `url` naming another database on the same servers, every host and query kept. */
export function withDatabase(url: string, database: string): string {
  const { hosts, first } = parseDatabaseUrl(url);
  const [, scheme, user = ""] = PARTS.exec(url)!;
  return `${scheme}${user}${hosts.join(",")}/${encodeURIComponent(database)}${first.search}${first.hash}`;
}

/** Where the URL points, for messages: its hosts, no user, password or database. */
export function databaseHosts(url: string): string {
  return parseDatabaseUrl(url).hosts.join(",");
}

/** The URL with its first host only (undefined when unset or unreadable). */
export function firstHostUrl(url: string | undefined): string | undefined {
  try {
    return url === undefined ? undefined : parseDatabaseUrl(url).first.toString();
  } catch {
    return undefined;
  }
}

const FORM = "postgres://user@host:port/database";

/**
 * What is wrong with a Postgres setting, said after its name (undefined: nothing). With
 * `severalHosts` the host part may list servers to try in turn (`host:port,host:port`, as libpq
 * reads it), so the processes follow a promoted standby; they must then ask for
 * `target_session_attrs=primary`: postgres.js judges `read-write` by
 * default_transaction_read_only, which a hot standby leaves off, so with `read-write` (or none)
 * it may settle on a standby and every write fails (docs/decisions/postgres-promotion.md). The
 * URL itself is never in the message: it holds the password.
 */
export function databaseUrlProblem(url: string, severalHosts: boolean): string | undefined {
  let parsed: DatabaseUrl;
  try {
    parsed = parseDatabaseUrl(url);
  } catch {
    return `is not a URL; expected ${FORM}`;
  }
  const scheme = parsed.first.protocol.replace(/:$/, "");
  if (scheme !== "postgres" && scheme !== "postgresql") {
    return `has the scheme "${scheme}"; expected ${FORM}`;
  }
  if (!parsed.first.hostname) return `has no host; expected ${FORM}`;
  const attrs = parsed.targetSessionAttrs;
  if (attrs !== undefined && !(TARGET_SESSION_ATTRS as readonly string[]).includes(attrs)) {
    return `has target_session_attrs=${attrs}; expected one of ${TARGET_SESSION_ATTRS.join(", ")}`;
  }
  const count = parsed.hosts.length;
  if (count > 1 && !severalHosts) {
    return `lists ${count} hosts; it takes one standby (a pool spread over several could answer from an older replay after a newer one)`;
  }
  if (count > 1 && attrs !== "primary") {
    return `lists ${count} hosts; add target_session_attrs=primary so that only the primary is used (with read-write or none a hot standby may be chosen)`;
  }
  return undefined;
}
