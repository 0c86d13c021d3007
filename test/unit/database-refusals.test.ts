import { describe, expect, test } from "bun:test";
import { isDatabaseUnreachable } from "../../api/problems.ts";

/** An error shaped as each driver shapes a server's refusal, wrapped the way drizzle wraps it. */
const postgresJs = (code: string) => ({ name: "PostgresError", code });
const bunSql = (errno: string) => ({
  name: "PostgresError",
  code: "ERR_POSTGRES_SERVER_ERROR",
  errno,
});
const wrapped = (cause: unknown) => ({ name: "DrizzleQueryError", cause });

describe("which database errors are a 503 (retry shortly), not a 500", () => {
  test("a hot standby cancelling a statement that conflicts with recovery (40001, 40P01)", () => {
    for (const code of ["40001", "40P01"]) {
      expect(isDatabaseUnreachable(postgresJs(code))).toBe(true);
      expect(isDatabaseUnreachable(bunSql(code))).toBe(true);
      expect(isDatabaseUnreachable(wrapped(postgresJs(code)))).toBe(true);
    }
  });

  test("connection failures, shutdowns and too many clients", () => {
    for (const code of ["08006", "57P01", "57P03", "53300"]) {
      expect(isDatabaseUnreachable(postgresJs(code))).toBe(true);
    }
    expect(isDatabaseUnreachable({ code: "ECONNREFUSED" })).toBe(true);
  });

  test("a fault of ours stays a 500: a syntax error, an undefined column, a division by zero", () => {
    for (const code of ["42601", "42703", "22012"]) {
      expect(isDatabaseUnreachable(postgresJs(code))).toBe(false);
      expect(isDatabaseUnreachable(bunSql(code))).toBe(false);
    }
  });
});
