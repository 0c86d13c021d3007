import { describe, expect, test } from "bun:test";
import {
  DatabaseUrlInvalid,
  databaseHosts,
  parseDatabaseUrl,
  withDatabase,
} from "../../lib/database-url.ts";

/** Database URLs naming several servers, as libpq and postgres.js read them. */
describe("database URLs", () => {
  const several =
    "postgres://cs:p%40ss@db1:5432,db2:5433/citizen_staking?target_session_attrs=primary";

  test("every host, the database and target_session_attrs are read", () => {
    const parsed = parseDatabaseUrl(several);
    expect(parsed.hosts).toEqual(["db1:5432", "db2:5433"]);
    expect(parsed.database).toBe("citizen_staking");
    expect(parsed.targetSessionAttrs).toBe("primary");
    expect(decodeURIComponent(parsed.first.password)).toBe("p@ss");
    expect(databaseHosts(several)).toBe("db1:5432,db2:5433");
  });

  test("another database on the same servers keeps every host and the query", () => {
    expect(withDatabase(several, "postgres")).toBe(
      "postgres://cs:p%40ss@db1:5432,db2:5433/postgres?target_session_attrs=primary",
    );
    expect(withDatabase("postgresql://127.0.0.1/x", "a b")).toBe("postgresql://127.0.0.1/a%20b");
    expect(parseDatabaseUrl("postgres://h:1/").database).toBe("");
  });

  test("what is not a URL is refused, without echoing it", () => {
    for (const bad of [
      "garbage",
      "postgres://h:1,/x",
      "postgres://h:1,h:port/x",
      "postgres://a b/x",
    ]) {
      expect(() => parseDatabaseUrl(bad)).toThrow(DatabaseUrlInvalid);
    }
    const refusal = (() => {
      try {
        parseDatabaseUrl("postgres://u:secret@h:1,/x");
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(refusal).toBe("has an empty host");
  });
});
