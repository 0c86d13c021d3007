/**
 * The API over real HTTP (app.listen on port 0 and fetch): probes, OpenAPI, token revocation,
 * the rate limit, access logs, and what happens when Postgres or Redis goes away.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import pino from "pino";
import { createApp } from "../../api/app.ts";
import { openConnections } from "../../api/connections.ts";
import { SYNC_EVERY_MS } from "../../api/modules/auth/rate-limit.ts";
import type { ProblemBody } from "../../api/problems.ts";
import { reconnectDelaySeconds } from "../../db/client.ts";
import { createToken, revokeToken } from "../../db/tokens.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";
import { createApiHarness, json, STAKER } from "./support.ts";

const silent = pino({ level: "silent" });
const logLines: string[] = [];
const captured = pino({ level: "info" }, { write: (line: string) => logLines.push(line) });

let api: Awaited<ReturnType<typeof createApiHarness>>;
let server: ReturnType<typeof api.app.listen>;
let base: string;

beforeAll(async () => {
  api = await createApiHarness({ log: captured, settings: { readyMaxLagBlocks: 5 } });
  await api.setCheckpoint(500n);
  await api.insertCitizens([{ season: 2, citizenId: 9n }]);
  server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});

afterAll(async () => {
  await server.stop();
  await api.close();
});

const get = (path: string, token: string | null = api.token) =>
  fetch(`${base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

describe("over HTTP", () => {
  test("a citizen is served with X-Indexed-Block", async () => {
    const response = await get(`/v1/staking/citizens/s2/9?address=${STAKER}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-indexed-block")).toBe("500");
    expect(await json<{ type: string }>(response)).toMatchObject({ id: "9", type: "s2" });
  });

  test("/healthz is up without a token", async () => {
    const response = await get("/healthz", null);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  test("/readyz is ready with a checkpoint and no chain head to judge lag by", async () => {
    const response = await get("/readyz", null);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      ready: true,
      database: "ok",
      indexedBlock: "500",
      lagBlocks: null,
    });
  });

  test("a 10 kB token over the wire is 401, not a server error", async () => {
    const response = await get(`/v1/staking/citizens/s2/9?address=${STAKER}`, "a".repeat(10_240));
    expect(response.status).toBe(401);
  });

  test("/openapi.json is OpenAPI 3 with the three paths, and /docs serves a page", async () => {
    const response = await get("/openapi.json", null);
    expect(response.status).toBe(200);
    const document = await json<{
      openapi: string;
      info: { title: string; version: string };
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
    }>(response);
    expect(document.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(document.info.title).toBeString();
    expect(document.info.version).toBeString();
    for (const path of [
      "/v1/staking/citizens/s1/{id}",
      "/v1/staking/citizens/s2/{id}",
      "/v1/staking/citizens",
    ]) {
      expect(document.paths[path]?.get).toBeDefined();
    }
    const listing = document.paths["/v1/staking/citizens"]!.get!;
    const names = listing.parameters?.map((parameter) => parameter.name).sort();
    expect(names).toEqual(["address", "block", "cursor", "limit", "order", "sort", "type"]);
    const single = document.paths["/v1/staking/citizens/s1/{id}"]!.get!;
    expect(single.parameters).toContainEqual(expect.objectContaining({ name: "id", in: "path" }));
    const docs = await get("/docs", null);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toContain("text/html");
  });

  test("access logs are JSON with method, path, status and ms, and never the token", async () => {
    logLines.length = 0;
    await get(`/v1/staking/citizens/s2/9?address=${STAKER}`);
    await Bun.sleep(20);
    const entries = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const access = entries.find((entry) => entry.path === "/v1/staking/citizens/s2/9");
    expect(access).toMatchObject({ method: "GET", status: 200, ms: expect.any(Number) });
    expect(logLines.join("\n")).not.toContain(api.token);
    expect(logLines.join("\n").toLowerCase()).not.toContain("authorization");
  });
});

describe("readiness", () => {
  test("judges the lag to the chain head when one is known, and needs a checkpoint", async () => {
    let head = 503n;
    const probe = await createApiHarness({ chainHead: async () => head });
    try {
      const ask = async () => {
        const response = await probe.app.handle(new Request("http://localhost/readyz"));
        return { status: response.status, body: await json<Record<string, unknown>>(response) };
      };
      expect(await ask()).toMatchObject({
        status: 503,
        body: { ready: false, indexedBlock: null },
      });
      await probe.setCheckpoint(500n);
      expect(await ask()).toMatchObject({
        status: 200,
        body: { ready: true, headBlock: "503", lagBlocks: 3, maxLagBlocks: 5 },
      });
      head = 510n;
      expect(await ask()).toMatchObject({ status: 503, body: { ready: false, lagBlocks: 10 } });
    } finally {
      await probe.close();
    }
  });
});

describe("tokens", () => {
  test("a revoked token is refused from the next request on", async () => {
    const { id, token } = await createToken(api.db, "short-lived");
    const path = `/v1/staking/citizens/s2/9?address=${STAKER}`;
    expect((await get(path, token)).status).toBe(200);
    expect(await revokeToken(api.db, id)).toBe(true);
    const response = await get(path, token);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect((await json<ProblemBody>(response)).detail).toContain("revoked");
  });
});

/** Limits count per minute; a test that needs one window waits when the minute is about to end. */
async function awayFromMinuteEnd() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 3_000) await Bun.sleep(left + 50);
}

describe("rate limit", () => {
  test("past the limit a token gets 429 with Retry-After; other tokens are unaffected", async () => {
    const limited = await createApiHarness({
      databaseUrl: api.databaseUrl,
      settings: { rateLimitPerMinute: 3 },
    });
    await awayFromMinuteEnd();
    try {
      const path = `/v1/staking/citizens/s2/9?address=${STAKER}`;
      for (let index = 0; index < 3; index++)
        expect((await limited.request(path)).status).toBe(200);
      const response = await limited.request(path);
      expect(response.status).toBe(429);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      const retryAfter = Number(response.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // No window set: the operator's limit per minute.
      expect((await json<ProblemBody>(response)).detail).toContain("3 requests a minute");
      const other = await createToken(api.db, "other");
      const fresh = await limited.request(path, {
        headers: { authorization: `Bearer ${other.token}` },
      });
      expect(fresh.status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  test("with Redis unreachable each instance limits on its own counts, and says so", async () => {
    const warnings: string[] = [];
    const alone = await createApiHarness({
      databaseUrl: api.databaseUrl,
      redisUrl: "redis://127.0.0.1:1",
      settings: { rateLimitPerMinute: 2 },
      log: pino({ level: "warn" }, { write: (line: string) => warnings.push(line) }),
    });
    await awayFromMinuteEnd();
    try {
      const path = `/v1/staking/citizens/s2/9?address=${STAKER}`;
      expect((await alone.request(path)).status).toBe(200);
      expect((await alone.request(path)).status).toBe(200);
      expect((await alone.request(path)).status).toBe(429);
      await Bun.sleep(SYNC_EVERY_MS * 3);
      expect(warnings.join("")).toContain("rate limiter cannot reach Redis");
    } finally {
      await alone.close();
    }
  });

  test("two API instances share one limit over HTTP", async () => {
    const settings = { rateLimitPerMinute: 4, keyPrefix: `${api.redisPrefix}-shared` };
    const first = await createApiHarness({ databaseUrl: api.databaseUrl, settings });
    const second = await createApiHarness({ databaseUrl: api.databaseUrl, settings });
    const servers = [first, second].map((instance) =>
      instance.app.listen({ hostname: "127.0.0.1", port: 0 }),
    );
    const { token } = await createToken(api.db, "shared-limit");
    await awayFromMinuteEnd();
    const ask = (server: (typeof servers)[number]) =>
      fetch(`http://127.0.0.1:${server.server!.port}/v1/staking/citizens/s2/9?address=${STAKER}`, {
        headers: { authorization: `Bearer ${token}` },
      });
    try {
      for (let index = 0; index < 3; index++) expect((await ask(servers[0]!)).status).toBe(200);
      await Bun.sleep(SYNC_EVERY_MS * 3);
      expect((await ask(servers[1]!)).status).toBe(200);
      // Both instances learn the shared total (4) at their next sync; neither admits a fifth.
      await Bun.sleep(SYNC_EVERY_MS * 3);
      for (const server of servers) {
        const refused = await ask(server);
        expect(refused.status).toBe(429);
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      }
    } finally {
      for (const server of servers) await server.stop();
      await first.close();
      await second.close();
    }
  });
});

describe("database outages", () => {
  test("Postgres unreachable is 503 with Retry-After, and probes say so", async () => {
    const connections = openConnections({
      databaseUrl: "postgres://postgres@127.0.0.1:1/nothing",
      redis: { url: "redis://127.0.0.1:6379" },
      poolSize: 1,
    });
    const app = createApp({
      db: connections.db,
      reads: connections.reads,
      redis: connections.redis,
      log: silent,
      settings: { rateLimitPerMinute: 100, readyMaxLagBlocks: 5, keyPrefix: api.redisPrefix },
    });
    try {
      const response = await app.handle(
        new Request(`http://localhost/v1/staking/citizens/s1/1?address=${STAKER}`, {
          headers: { authorization: `Bearer ${api.token}` },
        }),
      );
      expect(response.status).toBe(503);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
      const ready = await app.handle(new Request("http://localhost/readyz"));
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ ready: false, database: "unreachable" });
      expect((await app.handle(new Request("http://localhost/healthz"))).status).toBe(200);
    } finally {
      await connections.close();
    }
  });

  test(
    "when Postgres goes away and comes back the API recovers without a restart",
    async () => {
      const database = new URL(api.databaseUrl);
      const proxy = await startTcpProxy({
        host: database.hostname,
        port: Number(database.port || 5432),
      });
      const connections = openConnections({
        databaseUrl: proxy.route(api.databaseUrl),
        redis: { url: "redis://127.0.0.1:6379" },
        poolSize: 2,
      });
      const app = createApp({
        db: connections.db,
        reads: connections.reads,
        redis: connections.redis,
        log: silent,
        settings: { rateLimitPerMinute: 1_000, readyMaxLagBlocks: 5, keyPrefix: api.redisPrefix },
      });
      const ask = () =>
        app.handle(
          new Request(`http://localhost/v1/staking/citizens/s2/9?address=${STAKER}`, {
            headers: { authorization: `Bearer ${api.token}` },
          }),
        );
      try {
        expect((await ask()).status).toBe(200);
        proxy.cut();
        const during = await ask();
        expect(during.status).toBe(503);
        expect(during.headers.get("retry-after")).not.toBeNull();
        proxy.restore();
        // A dropped connection is opened again within the capped reconnect delay.
        const deadline =
          performance.now() + reconnectDelaySeconds(Infinity) * 1_000 + LOADED_MACHINE_MS;
        let status = 0;
        while (status !== 200 && performance.now() < deadline) {
          status = (await ask()).status;
          if (status !== 200) await Bun.sleep(100);
        }
        expect(status).toBe(200);
      } finally {
        // After an outage postgres.js may wait out end()'s 5 s timeout for a connection the
        // proxy cut; hence the longer test timeout.
        await connections.close();
        await proxy.stop();
      }
    },
    3 * LOADED_MACHINE_MS,
  );
});
