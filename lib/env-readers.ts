/**
 * Readers of one environment variable each, for lib/config.ts, the one module that hands them
 * process.env: each parses and checks its variable, and a bad value throws a ConfigError that
 * names the variable.
 */
import { isAddress } from "viem";
import { databaseUrlProblem } from "./database-url.ts";
import { Refused } from "./fail.ts";

export class ConfigError extends Refused {
  override name = "ConfigError";
}

export function envReaders(env: Readonly<Record<string, string | undefined>>) {
  function text(name: string, fallback: string): string {
    const value = env[name];
    return value === undefined || value === "" ? fallback : value;
  }

  function optionalText(name: string): string | undefined {
    const value = env[name];
    return value === undefined || value === "" ? undefined : value;
  }

  function integer(name: string, fallback: number, min = 0): number {
    const raw = optionalText(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
      throw new ConfigError(`${name} must be a whole number >= ${min}, got "${raw}"`);
    }
    return Number(raw);
  }

  function optionalInteger(name: string, min: number, max: number): number | undefined {
    const raw = optionalText(name);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  }

  /** A comma-separated list; empty when unset. */
  function list(name: string): string[] {
    return (optionalText(name) ?? "")
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
  }

  /** Browser origins as the Origin header sends them: scheme, host and an optional port. */
  function origins(name: string): string[] {
    const values = list(name);
    for (const value of values) {
      if (!/^https?:\/\/[^/\s]+$/.test(value)) {
        throw new ConfigError(
          `${name} must list origins like https://dash.example.com (no path), got "${value}"`,
        );
      }
    }
    return values;
  }

  function optionalBlock(name: string): bigint | undefined {
    const raw = optionalText(name);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a block number, got "${raw}"`);
    return BigInt(raw);
  }

  function optionalAddress(name: string): `0x${string}` | undefined {
    const raw = optionalText(name);
    if (raw === undefined) return undefined;
    if (!isAddress(raw, { strict: false })) {
      throw new ConfigError(`${name} must be a 0x-prefixed 20-byte address, got "${raw}"`);
    }
    return raw.toLowerCase() as `0x${string}`;
  }

  function oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = text(name, fallback);
    if (!(allowed as readonly string[]).includes(raw)) {
      throw new ConfigError(`${name} must be one of ${allowed.join(", ")}, got "${raw}"`);
    }
    return raw as T;
  }

  return {
    text,
    optionalText,
    integer,
    optionalInteger,
    list,
    origins,
    optionalBlock,
    optionalAddress,
    oneOf,
  };
}

/**
 * A URL with one of the given schemes and a host. The value is not echoed back: URLs carry
 * passwords and provider keys.
 */
export function url(name: string, value: string, schemes: readonly string[], what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} is not a URL; expected ${what}`);
  }
  const scheme = parsed.protocol.replace(/:$/, "");
  if (!schemes.includes(scheme)) {
    throw new ConfigError(`${name} has the scheme "${scheme}"; expected ${what}`);
  }
  if (!parsed.hostname) throw new ConfigError(`${name} has no host; expected ${what}`);
  return value;
}

/** A Postgres URL; DATABASE_URL alone may name several servers (lib/database-url.ts). */
export function databaseUrl(name: string, value: string, severalHosts: boolean): string {
  const problem = databaseUrlProblem(value, severalHosts);
  if (problem) throw new ConfigError(`${name} ${problem}`);
  return value;
}
