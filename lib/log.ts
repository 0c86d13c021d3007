import pino from "pino";
import { config } from "./config.ts";

/** JSON lines on stdout; each component gets a child logger carrying its name. */
const root = pino({
  level: config.logLevel,
  base: undefined,
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label) => ({ level: label }) },
  redact: ["token", "authorization", "headers.authorization"],
});

export function logger(component: string) {
  return root.child({ component });
}

/**
 * A one-line account of an error for logs and failed-job reasons: viem's messages embed the whole
 * request body (megabytes for a multicall), so its short message is used instead.
 */
export function errorSummary(error: unknown): string {
  if (!(error instanceof Error)) return String(error).slice(0, 500);
  const short = (error as Error & { shortMessage?: string }).shortMessage;
  const details = (error as Error & { details?: string }).details;
  const text = short ? (details ? `${short} (${details})` : short) : error.message;
  return `${error.name}: ${text}`.slice(0, 500);
}
