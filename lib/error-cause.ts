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

/** One line naming the innermost cause, at most `max` characters, secrets removed. */
export function describeCause(error: unknown, max = 300): string {
  const text = redactSecrets(ownText(innermostError(error)).replace(/\s+/g, " ").trim());
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The error code of the innermost cause (ECONNREFUSED, a Postgres SQLSTATE, …), if any. */
export function causeCode(error: unknown): string | undefined {
  const inner = innermostError(error) as Described;
  return typeof inner?.code === "string" ? inner.code : undefined;
}

/**
 * Secrets live in URLs: a password or user in the userinfo, a provider key in the path or the
 * query. Every text that leaves the process (a log line, a CLI error, `status`, /readyz) goes
 * through `redactSecrets`, which keeps of any URL only its scheme and host, and removes wherever
 * they appear the secret parts of the URLs the configuration names (`registerSecretUrls`, called
 * by lib/config.ts): passwords, the user, path and query of node URLs, and each path segment
 * and query value of 8 characters or more (a key printed apart from its URL). The user of a
 * Postgres or Redis URL is a role name their errors cite, so it stays outside URLs.
 */
const secretPieces = new Set<string>();
const SECRET_PIECE_MIN_LENGTH = 8;
const REDACTED = "***";

/**
 * A URL written in a text, up to the first character no URL holds unescaped (or a bracket) and
 * without the punctuation that ends a sentence around it.
 */
const URL_IN_TEXT =
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`\\(){}]+?(?=[.,;:!?]*(?:[\s"'<>`\\(){}]|$))/gi;

function withDecoded(piece: string): string[] {
  try {
    return [piece, decodeURIComponent(piece)];
  } catch {
    return [piece];
  }
}

export function registerSecretUrls(urls: readonly (string | undefined)[]): void {
  for (const raw of urls) {
    if (!raw) continue;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      // Unparseable: the whole value is the secret.
      secretPieces.add(raw);
      continue;
    }
    const node = /^(https?|wss?):$/.test(parsed.protocol);
    const pieces = [parsed.password, `${parsed.pathname}${parsed.search}`, parsed.search];
    if (node) {
      pieces.push(parsed.username, parsed.pathname);
      for (const segment of parsed.pathname.split("/")) {
        if (segment.length >= SECRET_PIECE_MIN_LENGTH) pieces.push(segment);
      }
      for (const value of parsed.searchParams.values()) {
        if (value.length >= SECRET_PIECE_MIN_LENGTH) pieces.push(value);
      }
    }
    for (const piece of pieces) {
      // Shorter pieces would cut into ordinary words and are no key anyway.
      if (piece.length < SECRET_PIECE_MIN_LENGTH / 2 || piece === "/") continue;
      for (const form of withDecoded(piece)) secretPieces.add(form);
    }
  }
}

/** Secrets given on their own (a password in a variable of its own), removed wherever they appear. */
export function registerSecrets(values: readonly (string | undefined)[]): void {
  for (const value of values) {
    if (value && value.length >= SECRET_PIECE_MIN_LENGTH / 2) {
      for (const form of withDecoded(value)) secretPieces.add(form);
    }
  }
}

/** A URL fit for a log line or an error: its scheme and host, and `/***` when it had more. */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const more =
      parsed.username !== "" ||
      parsed.password !== "" ||
      parsed.pathname.length > 1 ||
      parsed.search !== "" ||
      parsed.hash !== "";
    return `${parsed.protocol}//${parsed.host}${more ? `/${REDACTED}` : ""}`;
  } catch {
    const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0];
    return scheme ? `${scheme}${REDACTED}` : "(not a URL)";
  }
}

/** `text` with every URL reduced to its scheme and host and every known secret removed. */
export function redactSecrets(text: string): string {
  let redacted = text.replace(URL_IN_TEXT, (found) => safeUrl(found));
  // Longest first, so a path is removed whole before its segments.
  const pieces = [...secretPieces].sort((a, b) => b.length - a.length);
  for (const piece of pieces) redacted = redacted.replaceAll(piece, REDACTED);
  return redacted;
}
