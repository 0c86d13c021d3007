/**
 * Caching keyed by the data version, over real HTTP: ETags and 304s, the response cache after
 * the indexed block moves, token revocation with every cache warm, and CORS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { stakedCitizens } from "../../db/schema.ts";
import { createToken, revokeToken } from "../../db/tokens.ts";
import { createApiHarness, STAKER } from "./support.ts";

let api: Awaited<ReturnType<typeof createApiHarness>>;
let server: ReturnType<typeof api.app.listen>;
let base: string;

const DASHBOARD = "https://dash.example.com";
const single = `/v1/staking/citizens/s1/5?address=${STAKER}`;
const listing = `/v1/staking/citizens?address=${STAKER}`;

beforeAll(async () => {
  api = await createApiHarness({ settings: { corsOrigins: [DASHBOARD] } });
  await api.setCheckpoint(700n);
  await api.insertCitizens([{ season: 1, citizenId: 5n, totalPoints: 150n }]);
  server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});

afterAll(async () => {
  await server.stop();
  await api.close();
});

const get = (path: string, headers: Record<string, string> = {}, token = api.token) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });

/** Moves the checkpoint and changes the citizen in one transaction, as the indexer would. */
async function indexBlock(block: bigint, totalPoints: bigint) {
  await api.db
    .update(stakedCitizens)
    .set({ totalPoints })
    .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, 5n)));
  await api.setCheckpoint(block);
}

describe("conditional requests", () => {
  test("a 200 carries an ETag and Cache-Control; the same ETag back is a 304 with no body", async () => {
    for (const path of [single, listing]) {
      const first = await get(path);
      expect(first.status).toBe(200);
      const etag = first.headers.get("etag");
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(first.headers.get("cache-control")).toBe("private, no-cache");
      await first.arrayBuffer();

      const again = await get(path, { "if-none-match": etag! });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
      expect(again.headers.get("x-indexed-block")).toBe("700");

      const weak = await get(path, { "if-none-match": `"other", W/${etag}` });
      expect(weak.status).toBe(304);
      await weak.arrayBuffer();
    }
  });

  test("If-None-Match: * is a 304 for a staked citizen and still a 404 for one not staked", async () => {
    const found = await get(single, { "if-none-match": "*" });
    expect(found.status).toBe(304);
    const missing = await get(`/v1/staking/citizens/s1/6?address=${STAKER}`, {
      "if-none-match": "*",
    });
    expect(missing.status).toBe(404);
  });

  test("leading zeros name the same citizen: same body and ETag, and a 404 names the id without them", async () => {
    const plain = await get(single);
    const padded = await get(`/v1/staking/citizens/s1/0005?address=${STAKER}`);
    expect(padded.status).toBe(200);
    expect(padded.headers.get("etag")).toBe(plain.headers.get("etag"));
    expect(await padded.text()).toBe(await plain.text());
    const missing = await get(`/v1/staking/citizens/s1/006?address=${STAKER}`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).detail).toContain("s1 citizen 6 is not staked");
  });

  test("ETags differ between resources at the same block", async () => {
    const a = (await get(single)).headers.get("etag");
    const b = (await get(listing)).headers.get("etag");
    expect(a).not.toBe(b);
  });

  test("after the indexed block moves the old ETag gets a 200 with the new data and a new ETag", async () => {
    const before = await get(single);
    const etag = before.headers.get("etag")!;
    expect(((await before.json()) as { totalPoints: number }).totalPoints).toBe(150);
    // Warm the cache once more at this version, so a stale body would be there to serve.
    expect((await get(single)).status).toBe(200);

    await indexBlock(701n, 175n);
    const after = await get(single, { "if-none-match": etag });
    expect(after.status).toBe(200);
    expect(after.headers.get("x-indexed-block")).toBe("701");
    expect(after.headers.get("etag")).not.toBe(etag);
    expect(((await after.json()) as { totalPoints: number }).totalPoints).toBe(175);

    const plain = await get(single);
    expect(((await plain.json()) as { totalPoints: number }).totalPoints).toBe(175);
  });

  test("a reorg back to the same height changes the ETag too", async () => {
    const etag = (await get(single)).headers.get("etag")!;
    await indexBlock(700n, 160n);
    await indexBlock(701n, 190n);
    const after = await get(single, { "if-none-match": etag });
    expect(after.status).toBe(200);
    expect(((await after.json()) as { totalPoints: number }).totalPoints).toBe(190);
  });
});

describe("several instances", () => {
  test("two instances with warm caches both serve the new data once the block moves", async () => {
    const other = await createApiHarness({ databaseUrl: api.databaseUrl });
    const otherServer = other.app.listen({ hostname: "127.0.0.1", port: 0 });
    const bases = [base, `http://127.0.0.1:${otherServer.server!.port}`];
    const points = async (at: string) => {
      const response = await fetch(`${at}${single}`, {
        headers: { authorization: `Bearer ${api.token}` },
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { totalPoints: number }).totalPoints;
    };
    try {
      await indexBlock(702n, 200n);
      for (const at of bases) {
        expect(await points(at)).toBe(200);
        expect(await points(at)).toBe(200);
      }
      await indexBlock(703n, 210n);
      for (const at of bases) expect(await points(at)).toBe(210);
    } finally {
      await otherServer.stop();
      await other.close();
    }
  });
});

describe("revocation with warm caches", () => {
  test("a revoked token is refused on the very next request, cached body or ETag alike", async () => {
    const { id, token } = await createToken(api.db, "revoked-warm");
    const first = await get(single, {}, token);
    const etag = first.headers.get("etag")!;
    await first.arrayBuffer();
    expect((await get(single, {}, token)).status).toBe(200);
    expect((await get(single, { "if-none-match": etag }, token)).status).toBe(304);

    expect(await revokeToken(api.db, id)).toBe(true);
    for (const headers of [{}, { "if-none-match": etag }] as Record<string, string>[]) {
      const refused = await get(single, headers, token);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
      await refused.arrayBuffer();
    }
    const listed = await get(listing, {}, token);
    expect(listed.status).toBe(401);
  });
});

describe("the response cache", () => {
  const OWN_HEADERS = ["content-type", "etag", "cache-control", "x-indexed-block"];

  test("a hit answers the body and headers of the read that filled it, again and again", async () => {
    // The listing with limit=7 no other test asks for: its first request is the read.
    for (const fresh of [single, `${listing}&limit=7`]) {
      const read = await get(fresh);
      const readBody = await read.text();
      for (let hit = 0; hit < 3; hit++) {
        const cached = await get(fresh);
        expect(cached.status).toBe(200);
        expect(await cached.text()).toBe(readBody);
        for (const name of OWN_HEADERS) {
          expect(cached.headers.get(name)).toBe(read.headers.get(name));
        }
        expect(cached.headers.get("x-indexed-block")).toMatch(/^[0-9]+$/);
      }
    }
  });

  test("a hit never carries another request's CORS headers", async () => {
    // The read, then hits from the listed origin, from none and from another: an entry holds a
    // body and its own validators, never the CORS headers of the request that filled it.
    const path = `${listing}&limit=9`;
    const read = await get(path);
    await read.arrayBuffer();
    const origins = [DASHBOARD, undefined, "https://evil.example.com", DASHBOARD];
    for (const origin of origins) {
      const hit = await get(path, origin === undefined ? {} : { origin });
      expect(hit.status).toBe(200);
      expect(hit.headers.get("access-control-allow-origin")).toBe(
        origin === DASHBOARD ? DASHBOARD : null,
      );
      expect(hit.headers.get("etag")).toBe(read.headers.get("etag"));
      expect(hit.headers.get("x-indexed-block")).toBe(read.headers.get("x-indexed-block"));
      await hit.arrayBuffer();
    }
  });
});

describe("CORS", () => {
  test("a listed origin gets Access-Control-Allow-Origin and the exposed headers", async () => {
    const response = await get(single, { origin: DASHBOARD });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe(DASHBOARD);
    const exposed = response.headers.get("access-control-expose-headers") ?? "";
    for (const header of ["x-indexed-block", "x-as-of-block", "etag", "retry-after"]) {
      expect(exposed).toContain(header);
    }
  });

  test("an origin not listed gets no Access-Control-Allow-Origin", async () => {
    const response = await get(single, { origin: "https://evil.example.com" });
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
  });

  test("a preflight from a listed origin may send Authorization, If-None-Match and Last-Event-ID", async () => {
    const response = await fetch(`${base}${single}`, {
      method: "OPTIONS",
      headers: {
        origin: DASHBOARD,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization, if-none-match, last-event-id",
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(DASHBOARD);
    expect(response.headers.get("access-control-allow-headers")).toContain("authorization");
    expect(response.headers.get("access-control-allow-headers")).toContain("last-event-id");
    expect(response.headers.get("access-control-allow-methods")).toContain("GET");
  });

  test("without CORS_ORIGINS no response carries CORS headers", async () => {
    const plain = await createApiHarness({ databaseUrl: api.databaseUrl });
    try {
      const response = await plain.request(single, { headers: { origin: DASHBOARD } });
      expect(response.status).toBe(200);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await plain.close();
    }
  });
});
