import { describe, expect, test } from "bun:test";
import { HttpRequestError, ResponseBodyTooLargeError, RpcRequestError } from "viem";
import { rpcRetryDelay } from "../../indexer/chain/client.ts";
import { isLogAnswerTooLarge, LogRangeGovernor } from "../../indexer/chain/logs.ts";

describe("the eth_getLogs range governor", () => {
  test("a refused range halves, and growth stays below the refused span", () => {
    const governor = new LogRangeGovernor(1_000);
    expect(governor.shrink()).toBe(true);
    expect(governor.current).toBe(500);
    for (let i = 0; i < 10; i++) governor.grow(10);
    expect(governor.current).toBe(999);
  });

  test("large answers do not grow the range", () => {
    const governor = new LogRangeGovernor(1_000, 100);
    governor.grow(5_000);
    expect(governor.current).toBe(100);
    governor.grow(10);
    expect(governor.current).toBe(200);
  });

  test("after many answers it probes above a refused span again", () => {
    const governor = new LogRangeGovernor(1_000);
    governor.shrink();
    for (let i = 0; i < 300; i++) governor.grow(10);
    expect(governor.current).toBe(1_000);
  });

  test("a single block that is refused cannot shrink further", () => {
    const governor = new LogRangeGovernor(1, 1);
    expect(governor.shrink()).toBe(false);
  });
});

describe("which eth_getLogs failures shrink the range", () => {
  const rpcError = (code: number, message: string) =>
    new RpcRequestError({ body: {}, error: { code, message }, url: "http://node" });

  test("every oversized or refused answer shrinks, whatever its wording", () => {
    const refusals = [
      new ResponseBodyTooLargeError({ maxSize: 10 * 1024 * 1024, size: 11 * 1024 * 1024 }),
      new HttpRequestError({ url: "http://node", status: 413, details: "Payload Too Large" }),
      rpcError(-32005, "query returned more than 10000 results"),
      rpcError(-32005, "limit exceeded"),
      rpcError(-32602, "eth_getLogs is limited to a 10,000 range"),
      rpcError(
        -32000,
        "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range",
      ),
      rpcError(-32000, "block range is too wide"),
      rpcError(-32000, "exceed maximum block range: 5000"),
      rpcError(-32600, "query exceeds max results 20000, retry with the range 1-9"),
    ];
    for (const error of refusals) expect(isLogAnswerTooLarge(error)).toBe(true);
  });

  test("node failures and bad requests are not size refusals", () => {
    const others = [
      new HttpRequestError({ url: "http://node", status: 502, details: "Bad Gateway" }),
      rpcError(-32601, "the method eth_getLogs does not exist"),
      rpcError(-32000, "header not found"),
      new Error("socket hang up"),
    ];
    for (const error of others) expect(isLogAnswerTooLarge(error)).toBe(false);
  });

  test("a rate limit over -32005 is no size refusal, and the retry waits as long as it asks", () => {
    const limited = new RpcRequestError({
      body: {},
      url: "http://node",
      status: 429,
      error: {
        code: -32005,
        message: "project ID request rate exceeded",
        data: { current_rps: 13.3, allowed_rps: 10, backoff_seconds: 30 },
      },
    });
    expect(isLogAnswerTooLarge(limited)).toBe(false);
    expect(rpcRetryDelay({ count: 0, error: limited })).toBe(30_000);
  });

  test("a refused short range halves that range, not the governor's whole span", () => {
    const governor = new LogRangeGovernor(10_000);
    expect(governor.shrink(40n)).toBe(true);
    expect(governor.current).toBe(20);
  });

  test("a refusal of several blocks shrinks even when another job already shrank the span to 1", () => {
    const governor = new LogRangeGovernor(10_000, 1);
    expect(governor.shrink(4n)).toBe(true);
    expect(governor.current).toBe(1);
    expect(governor.shrink(1n)).toBe(false);
  });
});
