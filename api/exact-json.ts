/**
 * JSON text for records that hold uint256 values as bigints: each bigint is written as a JSON
 * integer with its exact digits (JSON.rawJSON), where JSON.stringify alone would throw and a
 * Number would round anything beyond 2^53.
 */
declare global {
  interface JSON {
    /** ES2025 (JSON.parse source text access); Bun has it, TypeScript's lib does not yet. */
    rawJSON(text: string): unknown;
  }
}

const exactIntegers = (_key: string, value: unknown) =>
  typeof value === "bigint" ? JSON.rawJSON(value.toString()) : value;

export function exactJson(value: unknown): string {
  return JSON.stringify(value, exactIntegers);
}
