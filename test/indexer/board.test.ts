import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Redis } from "ioredis";
import { type Board, startBoard } from "../../indexer/board.ts";
import {
  createQueues,
  enqueueRange,
  type Queues,
  redisConnection,
} from "../../indexer/jobs/queues.ts";
import { createScratchRedisPrefix } from "../support/redis.ts";

describe("the operators' board", () => {
  const scratch = createScratchRedisPrefix("board");
  const credentials = { user: "ops", password: "correct horse" };
  let connection: Redis;
  let queues: Queues;
  let board: Board;

  const get = (path: string, auth?: string) =>
    fetch(`${board.url}${path}`, auth ? { headers: { authorization: `Basic ${btoa(auth)}` } } : {});

  beforeAll(async () => {
    connection = redisConnection(scratch.url);
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
});
