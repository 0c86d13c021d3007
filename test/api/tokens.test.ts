/**
 * Tokens over their life: `token revoke` (the operator's command) ends the token's open live
 * streams on every API instance, an expired token is refused like a revoked one and its streams
 * end at expiry, and `token list` shows the expiry and when each token was last used.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { apiTokens } from "../../db/schema.ts";
import { createToken } from "../../db/tokens.ts";
import { runCommand } from "../support/commands.ts";
import { openStream } from "./stream-client.ts";
import { createApiHarness, STAKER } from "./support.ts";

/**
 * What the API promises: a revoked token's streams end within a second of the revocation's
 * commit (one NOTIFY to every instance). The bound allows ten times that for a loaded machine;
 * a stream the notification missed would run to its idle close, set far beyond it below.
 */
const REVOCATION_BOUND_MS = 10_000;
const IDLE_MS = 120_000;
/** How often the instances write tokens' last use here (a minute in production). */
const USAGE_FLUSH_MS = 200;

type Harness = Awaited<ReturnType<typeof createApiHarness>>;
const instances: Harness[] = [];
const servers: ReturnType<Harness["app"]["listen"]>[] = [];
let bases: string[];

const stream = `/v1/staking/citizens/stream?address=${STAKER}`;
const single = `/v1/staking/citizens/s1/5?address=${STAKER}`;

beforeAll(async () => {
  const settings = { stream: { idleMs: IDLE_MS }, tokenUsageFlushMs: USAGE_FLUSH_MS };
  const first = await createApiHarness({ settings });
  instances.push(first, await createApiHarness({ databaseUrl: first.databaseUrl, settings }));
  await first.setCheckpoint(500n);
  await first.insertCitizens([{ season: 1, citizenId: 5n }]);
  for (const api of instances) servers.push(api.app.listen({ hostname: "127.0.0.1", port: 0 }));
  bases = servers.map(({ server }) => `http://127.0.0.1:${server!.port}`);
});

afterAll(async () => {
  for (const api of instances) api.app.decorator.closeStreams();
  for (const server of servers) await server.stop();
  for (const api of instances) await api.close();
});

const db = () => instances[0]!.db;
const cli = (args: string[]) =>
  runCommand(["scripts/cli.ts", "token", ...args], {
    DATABASE_URL: instances[0]!.databaseUrl,
    LOG_LEVEL: "warn",
  });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Resolves with the milliseconds the stream took to end, or throws after `withinMs`. */
async function endOf(client: { ended: boolean }, withinMs: number): Promise<number> {
  const started = Date.now();
  while (!client.ended) {
    if (Date.now() - started > withinMs)
      throw new Error(`the stream still runs after ${withinMs} ms`);
    await Bun.sleep(10);
  }
  return Date.now() - started;
}

describe("token revoke", () => {
  test("ends the token's open streams on every instance, and only that token's", async () => {
    const revoked = await createToken(db(), "revoked-while-streaming");
    const other = await createToken(db(), "streaming-on");
    const streams = await Promise.all(
      bases.map((base) => openStream(`${base}${stream}`, bearer(revoked.token))),
    );
    const bystander = await openStream(`${bases[0]}${stream}`, bearer(other.token));
    for (const client of [...streams, bystander]) {
      expect(client.status).toBe(200);
      await client.until((events) => events.some((event) => event.event === "synced"));
    }

    const result = await cli(["revoke", String(revoked.id)]);
    expect(result).toMatchObject({ code: 0, stdout: `token ${revoked.id} revoked\n` });
    for (const client of streams) await endOf(client, REVOCATION_BOUND_MS);
    expect(bystander.ended).toBe(false);
    bystander.close();

    // Reconnecting is refused.
    const again = await fetch(`${bases[1]}${stream}`, { headers: bearer(revoked.token) });
    expect(again.status).toBe(401);
    await again.arrayBuffer();
  });
});

describe("expiry", () => {
  test("an expired token is 401 problem+json, and its open stream ends at expiry", async () => {
    // Long enough for the stream and a request to start first on a loaded machine.
    const lifetimeSeconds = 5;
    const expiring = await createToken(db(), "expiring", { expiresInSeconds: lifetimeSeconds });
    const created = Date.now();
    const live = await openStream(`${bases[1]}${stream}`, bearer(expiring.token));
    expect(live.status).toBe(200);
    const before = await fetch(`${bases[0]}${single}`, { headers: bearer(expiring.token) });
    expect(before.status).toBe(200);
    await before.arrayBuffer();

    // It ends at expiry, not at the idle close.
    await endOf(live, lifetimeSeconds * 1000 + REVOCATION_BOUND_MS);
    // Not before expiry (counted from just after the insert that set it).
    expect(Date.now() - created).toBeGreaterThanOrEqual(lifetimeSeconds * 1000 - 1_000);
    for (const base of bases) {
      for (const path of [single, stream]) {
        const refused = await fetch(`${base}${path}`, { headers: bearer(expiring.token) });
        expect(refused.status).toBe(401);
        expect(refused.headers.get("content-type")).toBe("application/problem+json");
        expect(refused.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
        expect(((await refused.json()) as { detail: string }).detail).toBe(
          "this token has expired",
        );
      }
    }
    const listed = await cli(["list"]);
    const line = listed.stdout.split("\n").find((each) => each.startsWith(`${expiring.id}\t`));
    expect(line).toContain("\texpired\t");
    expect(line).toContain(`expires ${expiring.expiresAt!.toISOString()}`);
  });

  test("token create --expires-in 30d sets the expiry 30 days out, and token list shows it", async () => {
    const created = await cli(["create", "--label", "a month", "--expires-in", "30d"]);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    const [row] = await db()
      .select({ id: apiTokens.id, createdAt: apiTokens.createdAt, expiresAt: apiTokens.expiresAt })
      .from(apiTokens)
      .where(eq(apiTokens.label, "a month"));
    expect(row!.expiresAt!.getTime() - row!.createdAt.getTime()).toBe(30 * 86_400_000);
    const response = await fetch(`${bases[0]}${single}`, { headers: bearer(token) });
    expect(response.status).toBe(200);
    await response.arrayBuffer();

    const listed = await cli(["list"]);
    const line = listed.stdout.split("\n").find((each) => each.startsWith(`${row!.id}\t`));
    expect(line).toContain("\tactive\t");
    expect(line).toContain(`expires ${row!.expiresAt!.toISOString()}`);

    for (const bad of ["30", "0d", "1y", "-1d"]) {
      const refused = await cli(["create", "--label", "bad", "--expires-in", bad]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("expected a whole number and a unit");
    }
  });
});

describe("last use", () => {
  test("a request moves the token's last use, written within the flush interval, and token list prints it", async () => {
    const { id, token } = await createToken(db(), "used");
    const lastUsed = async () => {
      const [row] = await db()
        .select({ lastUsedAt: apiTokens.lastUsedAt })
        .from(apiTokens)
        .where(eq(apiTokens.id, id));
      return row!.lastUsedAt;
    };
    expect(await lastUsed()).toBeNull();
    const unused = await cli(["list"]);
    expect(unused.stdout.split("\n").find((line) => line.startsWith(`${id}\t`))).toContain(
      "never used",
    );

    const requested = new Date();
    const response = await fetch(`${bases[1]}${single}`, { headers: bearer(token) });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const deadline = Date.now() + USAGE_FLUSH_MS * 50;
    while ((await lastUsed()) === null && Date.now() < deadline) await Bun.sleep(USAGE_FLUSH_MS);
    const stored = await lastUsed();
    expect(stored).not.toBeNull();
    // The API host's clock noted it; allow for the time the request took.
    expect(stored!.getTime()).toBeGreaterThanOrEqual(requested.getTime() - 1_000);

    const listed = await cli(["list"]);
    expect(listed.stdout.split("\n").find((line) => line.startsWith(`${id}\t`))).toContain(
      `last used ${stored!.toISOString()}`,
    );
  });
});
