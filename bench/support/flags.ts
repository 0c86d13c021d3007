/** Command-line flags of the benchmarks (settings of a run, not of the system: no env here). */
import { parseArgs } from "node:util";

export class BadFlag extends Error {
  override name = "BadFlag";
}

type Spec = Record<string, { type: "string" | "boolean"; default?: string | boolean }>;

export function readFlags<T extends Spec>(spec: T, argv = Bun.argv.slice(2)) {
  try {
    return parseArgs({ args: argv, options: spec, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new BadFlag((error as Error).message);
  }
}

export function wholeNumber(name: string, value: unknown, min = 1): number {
  const text = String(value);
  if (!/^\d+$/.test(text) || Number(text) < min) {
    throw new BadFlag(`--${name} must be a whole number >= ${min}, got "${text}"`);
  }
  return Number(text);
}

export function numberList(name: string, value: unknown): number[] {
  return String(value)
    .split(",")
    .map((part) => wholeNumber(name, part.trim()));
}

/** Runs a benchmark's main; a bad flag exits 2 with its message, anything else 1. */
export function runMain(main: () => Promise<void>): void {
  // Exiting runs the "exit" handlers that kill the benchmark's anvil and child processes.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => process.exit(130));
  }
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      if (error instanceof BadFlag) {
        console.error(`error: ${error.message}`);
        process.exit(2);
      }
      console.error(error);
      process.exit(1);
    },
  );
}
