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
