/**
 * How a command ends on an error: one line on stderr and an exit code an operator's script can
 * act on. 2: refused, fix the input or the configuration (a malformed variable, a range outside
 * the chain, a missing database). 1: failed, possibly for now (a service that cannot be reached,
 * an unexpected fault).
 */
import { describeCause, redactSecrets } from "./error-cause.ts";

/** The input or the configuration is wrong; retrying the same command cannot help. */
export class Refused extends Error {
  override name = "Refused";
}

/** A service the configuration names did not answer; the message names the variable. */
export class Unreachable extends Error {
  override name = "Unreachable";
}

type ErrorClass = abstract new (...args: never[]) => Error;

export function exitCodeFor(error: unknown, alsoRefused: readonly ErrorClass[] = []): 1 | 2 {
  if (error instanceof Refused) return 2;
  return alsoRefused.some((kind) => error instanceof kind) ? 2 : 1;
}

/** Our own errors already read as one line; anything else is reduced to its innermost cause. */
export function failureLine(error: unknown): string {
  if (error instanceof Refused || error instanceof Unreachable) return redactSecrets(error.message);
  const name = error instanceof Error ? error.name : "Error";
  return `${name}: ${describeCause(error)}`;
}

/** Prints `error: <one line>` and exits with the code for it. */
export function failAndExit(error: unknown, alsoRefused: readonly ErrorClass[] = []): never {
  console.error(`error: ${failureLine(error)}`);
  process.exit(exitCodeFor(error, alsoRefused));
}
