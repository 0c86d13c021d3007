/**
 * The benchmarks' flags (a run's settings, not the system's: no env here). Every bench takes
 * --smoke (a run of seconds, the test suite's), under which a flag's `smoke` default applies.
 */
import { parseArgs } from "node:util";

export class BadFlag extends Error {
  override name = "BadFlag";
}

type Kind = "string" | "number" | "numbers";
type Valued<K extends Kind, D> = { kind: K; default: D; smoke?: string; min: number };
type Flag = { kind: "boolean" } | Valued<Kind, string | undefined>;
type Parsed<K extends Kind> = { string: string; number: number; numbers: number[] }[K];
type Value<F> = F extends { kind: "boolean" }
  ? boolean
  : F extends Valued<infer K, infer D>
    ? D extends string
      ? Parsed<K>
      : Parsed<K> | undefined
    : never;

/** A flag's kinds: its text, a whole number (at least `min`), a comma-separated list of them. */
export const flag = {
  boolean: () => ({ kind: "boolean" }) as const,
  string: <D extends string | undefined>(fallback: D, smoke?: string) =>
    ({ kind: "string", default: fallback, smoke, min: 0 }) as const,
  number: <D extends string | undefined>(fallback: D, smoke?: string, min = 1) =>
    ({ kind: "number", default: fallback, smoke, min }) as const,
  numbers: <D extends string | undefined>(fallback: D, smoke?: string) =>
    ({ kind: "numbers", default: fallback, smoke, min: 1 }) as const,
};

export function wholeNumber(name: string, text: string, min = 1): number {
  if (!/^\d+$/.test(text) || Number(text) < min) {
    throw new BadFlag(`--${name} must be a whole number >= ${min}, got "${text}"`);
  }
  return Number(text);
}

export function readFlags<S extends Record<string, Flag>>(spec: S, args = Bun.argv.slice(2)) {
  const options = Object.fromEntries(
    Object.entries({ ...spec, smoke: flag.boolean() }).map(([name, { kind }]) => [
      name,
      { type: kind === "boolean" ? ("boolean" as const) : ("string" as const) },
    ]),
  );
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new BadFlag((error as Error).message);
  }
  const smoke = values.smoke === true;
  const read = (name: string, given: Flag) => {
    if (given.kind === "boolean") return values[name] === true;
    const text =
      (values[name] as string | undefined) ?? (smoke ? given.smoke : undefined) ?? given.default;
    if (text === undefined || given.kind === "string") return text;
    if (given.kind === "number") return wholeNumber(name, text, given.min);
    return text.split(",").map((part) => wholeNumber(name, part.trim(), given.min));
  };
  const entries = Object.entries(spec).map(([name, given]) => [name, read(name, given)]);
  return { smoke, ...Object.fromEntries(entries) } as { smoke: boolean } & {
    [K in keyof S]: Value<S[K]>;
  };
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
      console.error(error instanceof BadFlag ? `error: ${error.message}` : error);
      process.exit(error instanceof BadFlag ? 2 : 1);
    },
  );
}
