/**
 * The real cause of a failure, in one line. Libraries wrap what went wrong: drizzle turns a
 * refused connection into "Failed query: select …" with the driver's error as `cause`, viem puts
 * the transport's failure under `details`, Node reports a host with two addresses as an
 * AggregateError. Operators need the innermost reason (ECONNREFUSED, database "x" does not
 * exist), so this walks down to it.
 */

type Described = Error & {
  code?: unknown;
  shortMessage?: unknown;
  details?: unknown;
  errors?: unknown;
};

/** The innermost error: follows `cause` and the first of an AggregateError's `errors`. */
export function innermostError(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 10; depth++) {
    const next = nextCause(current);
    if (next === undefined) return current;
    current = next;
  }
  return current;
}

function nextCause(error: unknown): unknown {
  if (!(error instanceof Error)) return undefined;
  const described = error as Described;
  // viem keeps its own chain in `cause` too, but its outer shortMessage + details already say
  // what the innermost says, in words an operator knows ("HTTP request failed").
  if (typeof described.shortMessage === "string") return undefined;
  if (error.cause instanceof Error) return error.cause;
  if (Array.isArray(described.errors) && described.errors[0] instanceof Error) {
    return described.errors[0];
  }
  return undefined;
}

/** The error's own text on one line, without stacks or request bodies. */
function ownText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const described = error as Described;
  if (typeof described.shortMessage === "string") {
    const details = typeof described.details === "string" ? described.details : "";
    return details && !described.shortMessage.includes(details)
      ? `${described.shortMessage} ${details}`
      : described.shortMessage;
  }
  // System codes (ECONNREFUSED) and postgres.js's own (CONNECT_TIMEOUT) say something the
  // message may not; a Postgres SQLSTATE (3D000) does not, its message says it in words.
  const code =
    typeof described.code === "string" && /^[A-Z_]+$/.test(described.code) ? described.code : "";
  if (!error.message) return code || error.name;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}

/** One line naming the innermost cause, at most `max` characters. */
export function describeCause(error: unknown, max = 300): string {
  const text = ownText(innermostError(error)).replace(/\s+/g, " ").trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The error code of the innermost cause (ECONNREFUSED, a Postgres SQLSTATE, …), if any. */
export function causeCode(error: unknown): string | undefined {
  const inner = innermostError(error) as Described;
  return typeof inner?.code === "string" ? inner.code : undefined;
}

/** A URL fit for a log line or an error: no password, and for RPC no path (keys live there). */
export function safeUrl(url: string, { keepPath = true } = {}): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    if (!keepPath) return `${parsed.protocol}//${parsed.host}`;
    parsed.search = "";
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}
