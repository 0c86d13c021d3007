/**
 * The redaction rule itself (lib/error-cause.ts), on the texts it meets: error messages quoting a
 * URL, a node's answer echoing its key, JSON log lines, percent-encoded keys. The commands that
 * print through it are in secrets.test.ts.
 */
import { expect, test } from "bun:test";
import { redactSecrets, registerSecretUrls, safeUrl } from "../../lib/error-cause.ts";

const KEY = "0123456789abcdef0123456789abcdef";
const NODE = `https://opsUser:pa%24%24word1@node.example/v3/${KEY}?token=queryToken77`;
registerSecretUrls([NODE, "postgres://reader:dbPassw0rd@127.0.0.1:5432/staking?sslmode=disable"]);

test("any URL keeps its scheme and host, and says when more was removed", () => {
  expect(safeUrl(NODE)).toBe("https://node.example/***");
  expect(safeUrl("redis://127.0.0.1:6380")).toBe("redis://127.0.0.1:6380");
  expect(redactSecrets(`fetching "https://other.example:8443/key/abc?x=1". Then`)).toBe(
    `fetching "https://other.example:8443/***". Then`,
  );
  expect(redactSecrets("REDIS_URL (redis://127.0.0.1:6380): cannot connect")).toBe(
    "REDIS_URL (redis://127.0.0.1:6380): cannot connect",
  );
});

test("a configured URL's secrets are removed wherever they appear, also decoded", () => {
  const text = `invalid project id ${KEY}; token queryToken77; password pa$$word1 for opsUser; stops`;
  const redacted = redactSecrets(text);
  for (const secret of [KEY, "queryToken77", "pa$$word1", "opsUser"]) {
    expect(redacted).not.toContain(secret);
  }
  expect(redacted).toContain("stops");
});

test("in a JSON log line the URL ends at the escaped newline", () => {
  const line = JSON.stringify({ err: `HTTP request failed.\n\nURL: ${NODE}\nbody` });
  expect(redactSecrets(line)).toBe(
    JSON.stringify({ err: "HTTP request failed.\n\nURL: https://node.example/***\nbody" }),
  );
});

test("a Postgres URL loses its password and path in URLs, its role and database stay readable", () => {
  const text =
    'postgres://reader:dbPassw0rd@127.0.0.1:5432/staking?sslmode=disable: database "staking" does not exist for role "reader" (dbPassw0rd)';
  expect(redactSecrets(text)).toBe(
    'postgres://127.0.0.1:5432/***: database "staking" does not exist for role "reader" (***)',
  );
});
