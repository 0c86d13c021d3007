import { afterAll, describe, expect, test } from "bun:test";
import { MAX_ANSWER_BYTES } from "../../indexer/chain/capped-answers.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import { isLogAnswerTooLarge } from "../../indexer/chain/logs.ts";

/** A node whose eth_chainId answer is `size` bytes of JSON, with or without Content-Length. */
function nodeAnswering(size: number, chunked: boolean) {
  const answer = (id: number) => {
    const head = `{"jsonrpc":"2.0","id":${id},"result":"0x1","pad":"`;
    return `${head}${"0".repeat(Math.max(0, size - head.length - 2))}"}`;
  };
  return Bun.serve({
    port: 0,
    async fetch(request) {
      const { id } = (await request.json()) as { id: number };
      const body = answer(id);
      if (!chunked) return new Response(body, { headers: { "content-type": "application/json" } });
      const bytes = new TextEncoder().encode(body);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 64 * 1024) {
            controller.enqueue(bytes.subarray(at, at + 64 * 1024));
          }
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "application/json" } });
    },
  });
}

describe("answers read whole, capped as viem caps them", () => {
  const servers: ReturnType<typeof Bun.serve>[] = [];
  afterAll(() => {
    for (const server of servers) server.stop(true);
  });

  for (const chunked of [false, true]) {
    const kind = chunked ? "a chunked answer" : "an answer with its length";
    test(`${kind} under the cap is read`, async () => {
      const server = nodeAnswering(1024 * 1024, chunked);
      servers.push(server);
      const client = createChainClient(server.url.href, { retryCount: 0, jsonRpcBatch: false });
      expect(await client.getChainId()).toBe(1);
    });

    test(`${kind} over the cap is refused as a range too large`, async () => {
      const server = nodeAnswering(MAX_ANSWER_BYTES + 1024, chunked);
      servers.push(server);
      const client = createChainClient(server.url.href, { retryCount: 0, jsonRpcBatch: false });
      const error = await client.getChainId().catch((failure: unknown) => failure);
      expect(isLogAnswerTooLarge(error)).toBe(true);
    });
  }
});
