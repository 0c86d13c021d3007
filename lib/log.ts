import pino from "pino";
import { config } from "./config.ts";
import { redactSecrets } from "./error-cause.ts";

const stdout = pino.destination({ dest: 1, sync: true });

/**
 * JSON lines on stdout; each component gets a child logger carrying its name. Every line passes
 * through `redactSecrets` whole, so no field (an error, a cause, a message) can carry a URL's
 * password or key.
 */
const root = pino(
  {
    level: config.logLevel,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: ["token", "authorization", "headers.authorization"],
  },
  { write: (line: string) => stdout.write(redactSecrets(line)) },
);

export function logger(component: string) {
  return root.child({ component });
}

/**
 * A one-line account of an error for logs and failed-job reasons: viem's messages embed the whole
 * request body (megabytes for a multicall), so its short message is used instead.
 */
export function errorSummary(error: unknown): string {
  if (!(error instanceof Error)) return redactSecrets(String(error)).slice(0, 500);
  const short = (error as Error & { shortMessage?: string }).shortMessage;
  const details = (error as Error & { details?: string }).details;
  const text = short ? (details ? `${short} (${details})` : short) : error.message;
  return redactSecrets(`${error.name}: ${text}`).slice(0, 500);
}
