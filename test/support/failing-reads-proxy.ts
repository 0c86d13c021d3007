/**
 * An HTTP proxy in front of a JSON-RPC node that fails chosen methods a set number of times, the
 * way a node restarting or behind a struggling gateway does: the connection reset with no answer,
 * or an HTTP 503. Requests for other methods, and every request once the count is used up, pass.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export type ReadFault = "reset" | "503";

export async function startFailingReadsProxy(upstream: string) {
  const failing = new Map<string, { fault: ReadFault; left: number }>();
  const served: Record<ReadFault, number> = { reset: 0, "503": 0 };
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const methods = [body]
      .flatMap((text) => [JSON.parse(text)].flat() as { method: string }[])
      .map((call) => call.method);
    const failure = methods.map((method) => failing.get(method)).find((each) => each?.left);
    if (failure) {
      failure.left--;
      served[failure.fault]++;
      if (failure.fault === "reset") {
        request.socket.destroy();
        return;
      }
      response.writeHead(503, { "content-type": "text/plain" }).end("service unavailable");
      return;
    }
    const answer = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    response
      .writeHead(answer.status, { "content-type": "application/json" })
      .end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    /** The next `times` requests calling `method` fail with `fault` (Infinity: until changed). */
    fail(method: string, fault: ReadFault, times: number) {
      failing.set(method, { fault, left: times });
    },
    /** Every method answers again. */
    heal: () => failing.clear(),
    /** Requests still to fail, over every method. */
    pending: () => [...failing.values()].reduce((sum, each) => sum + each.left, 0),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
