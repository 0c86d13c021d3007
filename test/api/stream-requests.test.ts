import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv from "ajv";
import pino from "pino";
import postgres from "postgres";
import { createToken } from "../../db/tokens.ts";
import { assemble, openStream, type StreamClient } from "./stream-client.ts";
import { createApiHarness, STAKER } from "./support.ts";

/** The stream's request handling over real HTTP, on rows written by hand. */
describe("the live stream's requests", () => {
  let api: Awaited<ReturnType<typeof createApiHarness>>;
  let server: ReturnType<Awaited<ReturnType<typeof createApiHarness>>["app"]["listen"]>;
  let base: string;
  /** A second instance on the same database and Redis prefix. */
  let other: Awaited<ReturnType<typeof createApiHarness>>;
  let otherServer: ReturnType<Awaited<ReturnType<typeof createApiHarness>>["app"]["listen"]>;
  let otherBase: string;
  const opened: StreamClient[] = [];

  const stream = async (
    query: string,
    headers: Record<string, string> = {},
    token = api.token,
    at = base,
  ) => {
    const client = await openStream(`${at}/v1/staking/citizens/stream${query}`, {
      authorization: `Bearer ${token}`,
      ...headers,
    });
    opened.push(client);
    return client;
  };

  beforeAll(async () => {
    api = await createApiHarness({ settings: { stream: { maxPerToken: 2, keepAliveMs: 50 } } });
    await api.setCheckpoint(100n);
    await api.insertCitizens([
      { season: 1, citizenId: 7n },
      { season: 2, citizenId: 7n },
    ]);
    server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${server.server?.port}`;
    other = await createApiHarness({
      databaseUrl: api.databaseUrl,
      settings: { keyPrefix: api.redisPrefix, stream: { maxPerToken: 2, idleMs: 400 } },
    });
    otherServer = other.app.listen({ hostname: "127.0.0.1", port: 0 });
    otherBase = `http://127.0.0.1:${otherServer.server?.port}`;
  });

  afterAll(async () => {
    for (const client of opened) client.close();
    await server?.stop(true);
    await otherServer?.stop(true);
    await other?.close();
    await api?.close();
  });

  test("without a token it is 401 problem+json before any event", async () => {
    const response = await fetch(`${base}/v1/staking/citizens/stream?address=${STAKER}`);
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
  });

  test("a bad address or Last-Event-ID is 400 naming it", async () => {
    for (const [query, headers] of [
      ["?address=0x123", {}],
      ["", {}],
      [`?address=${STAKER}`, { "last-event-id": "12abc" }],
    ] as const) {
      const client = await stream(query, headers);
      expect(client.status).toBe(400);
      expect(client.headers.get("content-type")).toBe("application/problem+json");
    }
    const response = await fetch(`${base}/v1/staking/citizens/stream?address=nope`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    expect(((await response.json()) as { parameter: string }).parameter).toBe("address");
  });

  test("an unknown token with a bad address is 401, not 400", async () => {
    const client = await stream("?address=0x123", {}, "unknown-token");
    expect(client.status).toBe(401);
  });

  test("a new stream sends the full set, then synced with the indexed block as id", async () => {
    const client = await stream(`?address=${STAKER.toUpperCase().replace("0X", "0x")}`);
    expect(client.status).toBe(200);
    expect(client.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    await client.until((events) => events.some((event) => event.event === "synced"));
    expect(client.events.map((event) => [event.event, event.id])).toEqual([
      ["citizen", undefined],
      ["citizen", undefined],
      ["synced", "100"],
    ]);
    const single = await api.request(`/v1/staking/citizens/s1/7?address=${STAKER}`);
    expect(assemble(client.events).get("s1:7")).toEqual(await single.json());
    await client.until(() => client.comments > 0);
    client.close();
  });

  test("a token holding its limit of streams, on any instance, gets 429 until one closes", async () => {
    const first = await stream(`?address=${STAKER}`);
    const second = await stream(`?address=${STAKER}`, {}, api.token, otherBase);
    const third = await stream(`?address=${STAKER}`);
    const fourth = await stream(`?address=${STAKER}`, {}, api.token, otherBase);
    expect([first.status, second.status, third.status, fourth.status]).toEqual([
      200, 200, 429, 429,
    ]);
    expect(third.headers.get("content-type")).toBe("application/problem+json");
    expect(third.headers.get("retry-after")).toBe("1");
    const other = await createToken(api.db, "other");
    const otherToken = await stream(`?address=${STAKER}`, {}, other.token);
    expect(otherToken.status).toBe(200);
    first.close();
    const deadline = Date.now() + 5_000;
    let again = await stream(`?address=${STAKER}`);
    while (again.status === 429 && Date.now() < deadline) {
      await Bun.sleep(50);
      again = await stream(`?address=${STAKER}`);
    }
    expect(again.status).toBe(200);
    for (const client of [second, otherToken, again]) client.close();
  });

  test("a change to the rows is sent as the difference, and a removal as removed", async () => {
    const client = await stream(`?address=${STAKER}`);
    await client.until((events) => events.some((event) => event.event === "synced"));
    await api.insertCitizens([{ season: 1, citizenId: 9n }]);
    await api.removeCitizen(2, 7n);
    await client.until((events) => events.some((event) => event.event === "removed"));
    const after = client.events.slice(3).filter((event) => event.event !== "synced");
    expect(after).toContainEqual({
      event: "removed",
      id: undefined,
      data: { block: 100, type: "s2", id: "7" },
    });
    expect(
      after
        .filter((event) => event.event === "citizen")
        .map((event) => (event.data as { citizen: { id: string } }).citizen.id),
    ).toEqual(["9"]);
    client.close();
  });

  test("a stream with no change for the idle time is closed cleanly (the client resumes)", async () => {
    const client = await stream(`?address=${STAKER}`, {}, api.token, otherBase);
    expect(client.status).toBe(200);
    const deadline = Date.now() + 5_000;
    while (!client.ended && Date.now() < deadline) await Bun.sleep(20);
    expect(client.ended).toBe(true);
    expect(client.events.at(-1)?.event).toBe("synced");
  });

  test("closeStreams ends every open stream, so a graceful stop does not wait for them", async () => {
    const client = await stream(`?address=${STAKER}`, {}, api.token, otherBase);
    await client.until((events) => events.some((event) => event.event === "synced"));
    other.app.decorator.closeStreams();
    const deadline = Date.now() + 5_000;
    while (!client.ended && Date.now() < deadline) await Bun.sleep(20);
    expect(client.ended).toBe(true);
  });

  test("the OpenAPI document declares the stream as text/event-stream, and every event fits its shapes", async () => {
    type Operation = {
      responses: Record<string, { content?: Record<string, { schema: object }> }>;
    };
    const document = (await (await api.request("/openapi.json")).json()) as {
      paths: Record<string, { get: Operation }>;
    };
    const operation = document.paths["/v1/staking/citizens/stream"]!.get;
    const schema = operation.responses["200"]?.content?.["text/event-stream"]?.schema;
    expect(schema).toBeDefined();
    expect(Object.keys(operation.responses).sort()).toEqual(["200", "400", "401", "429", "503"]);
    const check = new Ajv({ strict: false, allErrors: true }).compile(schema!);
    const client = await stream(`?address=${STAKER}`, { "last-event-id": "150" });
    await client.until((events) => events.some((event) => event.event === "synced"));
    expect(new Set(client.events.map((event) => event.event))).toEqual(
      new Set(["reset", "citizen", "synced"]),
    );
    for (const event of client.events) expect(check(event.data) ? [] : check.errors).toEqual([]);
    client.close();
  });

  test("Last-Event-ID above the indexed block (a block a reorg took back) resets to the full set", async () => {
    const client = await stream(`?address=${STAKER}`, { "last-event-id": "150" });
    await client.until((events) => events.some((event) => event.event === "synced"));
    expect(client.events[0]).toEqual({ event: "reset", id: undefined, data: { block: 100 } });
    expect([...assemble(client.events).keys()].sort()).toEqual(["s1:7", "s1:9"]);
    client.close();
  });
});

/**
 * A resume placed against a read of the wallet that an operator's rollback overtook: the
 * tables then refuse its block (staked_citizens_at, SQLSTATE CS416) although the read said it
 * was indexed. Two streams of one wallet share each read, so the second is placed after the
 * first one's baseline; table locks hold that baseline while the checkpoint moves back.
 */
describe("a resume that a rollback overtakes", () => {
  test("resets the stream, as a resume the server cannot place does, without a failed read", async () => {
    const warnings: string[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
    const api = await createApiHarness({ log });
    const locks = postgres(api.databaseUrl, { max: 3, onnotice: () => {} });
    const server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${server.server?.port}/v1/staking/citizens/stream?address=${STAKER}`;
    const headers = { authorization: `Bearer ${api.token}`, "last-event-id": "100" };
    const clients: StreamClient[] = [];
    try {
      await api.setCheckpoint(100n);
      await api.insertCitizens([{ season: 1, citizenId: 7n }]);
      // The wallet's read waits on staked_citizens, a baseline on staked_citizens_history.
      const [reads, baselines] = await Promise.all([locks.reserve(), locks.reserve()]);
      await reads`begin`;
      await reads`lock table staked_citizens in access exclusive mode`;
      await baselines`begin`;
      await baselines`lock table staked_citizens_history in access exclusive mode`;
      clients.push(await openStream(url, headers));
      clients.push(await openStream(url, headers));
      await reads`commit`;
      reads.release();
      // The first stream's baseline is past the function's check and waits for the history.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const [waiting] = await locks`
          select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and query like '%staked_citizens_at%'`;
        if (waiting?.n === 1) break;
        if (Date.now() > deadline) throw new Error("the first baseline never reached its read");
        await Bun.sleep(20);
      }
      await api.setCheckpoint(90n);
      await baselines`commit`;
      baselines.release();
      const second = clients[1]!;
      await second.until((events) => events.some((event) => event.event === "synced"));
      expect(warnings.filter((line) => line.includes("stream read failed"))).toEqual([]);
      expect(second.events[0]?.event).toBe("reset");
      // The read after the rollback brings the stream down to the checkpoint, like a reorg's.
      await second.until((events) => events.some((event) => event.id === "90"));
    } finally {
      for (const client of clients) client.close();
      await server.stop(true);
      await locks.end();
      await api.close();
    }
  }, 30_000);
});
