import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UnrecoverableError, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { createQueues, enqueueRange, QUEUE, type Queues } from "../../indexer/queues/queues.ts";
import { PortInUse } from "../../lib/listen.ts";
import { openRedis } from "../../lib/redis.ts";
import { type Board, boardRequestAllowed, startBoard } from "../../ops/board.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";

describe("the operators' board", () => {
  const scratch = createScratchRedisPrefix("board");
  const credentials = { user: "ops", password: "correct horse" };
  let connection: Redis;
  let queues: Queues;
  let board: Board;

  const get = (path: string, auth?: string) =>
    fetch(`${board.url}${path}`, auth ? { headers: { authorization: `Basic ${btoa(auth)}` } } : {});

  beforeAll(async () => {
    connection = openRedis({ url: scratch.url }, "queues");
    queues = createQueues(connection, scratch.prefix);
    await enqueueRange(queues.chunks, 1n, 100n, 100);
    board = await startBoard({ queues, credentials, port: 0 });
  });

  afterAll(async () => {
    await board?.stop();
    await queues?.close();
    await connection?.quit();
    await scratch.clean();
  });

  test("listens on loopback only", () => {
    expect(board.url).toBe(`http://127.0.0.1:${board.port}`);
  });

  test("without credentials, or with wrong ones, every path answers 401 with a Basic challenge", async () => {
    for (const [path, auth] of [
      ["/api/queues", undefined],
      ["/api/queues", "ops:wrong"],
      ["/api/queues", "someone:correct horse"],
      ["/api/queues", "ops"],
      ["/", undefined],
    ] as const) {
      const response = await get(path, auth);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toStartWith("Basic ");
      await response.text();
    }
  });

  test("with the credentials, the API lists both queues and the waiting chunk", async () => {
    const response = await get("/api/queues", "ops:correct horse");
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      queues: Array<{ name: string; counts: Record<string, number> }>;
    };
    expect(body.queues.map((queue) => queue.name).sort()).toEqual(["chunks", "follow"]);
    expect(body.queues.find((queue) => queue.name === "chunks")?.counts.waiting).toBe(1);
  });

  test("with the credentials, the page is served", async () => {
    const response = await get("/", "ops:correct horse");
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("<html");
  });

  test("the page references nothing outside the board, and its policy forbids it", async () => {
    const response = await get("/", "ops:correct horse");
    const page = await response.text();
    const external = [...page.matchAll(/(?:href|src)\s*=\s*"((?:https?:)?\/\/[^"]*)"/gi)];
    expect(external.map((match) => match[1])).toEqual([]);
    expect(page).not.toMatch(/https?:\/\//);
    expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
  });

  test("read-only by default: retry, clean, promote, pause, add and the rest are refused", async () => {
    const before = await queues.chunks.getJobCounts();
    for (const path of [
      "/api/queues/chunks/retry/failed",
      "/api/queues/chunks/index-1-100/retry",
      "/api/queues/chunks/clean/waiting",
      "/api/queues/chunks/index-1-100/clean",
      "/api/queues/chunks/promote",
      "/api/queues/chunks/pause",
      "/api/queues/pause",
      "/api/queues/chunks/empty",
      "/api/queues/chunks/obliterate",
    ]) {
      const response = await fetch(`${board.url}${path}`, {
        method: "PUT",
        headers: { authorization: `Basic ${btoa("ops:correct horse")}` },
      });
      expect({ path, status: response.status }).toEqual({ path, status: 405 });
      expect(await response.text()).toContain("read-only");
    }
    expect(await queues.chunks.getJobCounts()).toEqual(before);
    expect(await queues.chunks.isPaused()).toBe(false);
    const job = await get("/api/queues/chunks/index-1-100", "ops:correct horse");
    expect(job.status).toBe(200);
    await job.text();
  });
});

describe("which board requests are served", () => {
  test.each([
    ["GET", "/api/queues", false, true],
    ["PUT", "/api/queues/chunks/retry/failed", false, false],
    ["PUT", "/api/queues/chunks/retry/failed", true, true],
    ["PUT", "/api/queues/chunks/index-1-2/retry", true, true],
    ["PUT", "/api/queues/chunks/index-1-2/clean", true, false],
    ["PUT", "/api/queues/chunks/clean/completed", true, false],
    ["PUT", "/api/queues/chunks/promote", true, false],
    ["PUT", "/api/queues/pause", true, false],
    ["POST", "/api/queues/chunks/add", true, false],
    ["PATCH", "/api/queues/chunks/index-1-2/update-data", true, false],
    ["DELETE", "/api/queues/chunks/index-1-2/retry", true, false],
  ])("%s %s with retries allowed=%p: %p", (method, path, allowRetries, served) => {
    expect(boardRequestAllowed(method, path, allowRetries)).toBe(served);
  });
});

describe("the board with --allow-retries", () => {
  const scratch = createScratchRedisPrefix("board-retries");
  const credentials = { user: "ops", password: "pw" };
  let connection: Redis;
  let queues: Queues;
  let board: Board;
  const put = (path: string) =>
    fetch(`${board.url}${path}`, {
      method: "PUT",
      headers: { authorization: `Basic ${btoa("ops:pw")}` },
    });

  beforeAll(async () => {
    connection = openRedis({ url: scratch.url }, "queues");
    queues = createQueues(connection, scratch.prefix);
    await enqueueRange(queues.chunks, 1n, 10n, 10);
    const failing = new Worker(
      QUEUE.chunks,
      async () => {
        throw new UnrecoverableError("fails on purpose");
      },
      { connection, prefix: scratch.prefix },
    );
    while ((await queues.chunks.getJobCountByTypes("failed")) === 0) await Bun.sleep(20);
    await failing.close();
    board = await startBoard({ queues, credentials, port: 0, allowRetries: true });
  });

  afterAll(async () => {
    await board?.stop();
    await queues?.close();
    await connection?.quit();
    await scratch.clean();
  });

  test("a failed job can be retried; cleaning it stays refused", async () => {
    expect((await put("/api/queues/chunks/index-1-10/clean")).status).toBe(405);
    expect(await queues.chunks.getJobCountByTypes("failed")).toBe(1);
    expect((await put("/api/queues/chunks/index-1-10/retry")).status).toBe(204);
    expect(await queues.chunks.getJobCountByTypes("failed")).toBe(0);
    expect(await queues.chunks.getJobCountByTypes("waiting")).toBe(1);
  });

  test("a port already held (even by a server that shares ports) is PortInUse naming --port", async () => {
    const holder = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      reusePort: true,
      fetch: () => new Response("held"),
    });
    try {
      const second = startBoard({ queues, credentials, port: holder.port! });
      await expect(second).rejects.toThrow(PortInUse);
      await expect(second).rejects.toThrow(`--port ${holder.port}`);
    } finally {
      await holder.stop();
    }
  });
});
