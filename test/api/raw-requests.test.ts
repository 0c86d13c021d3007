/**
 * Requests written byte by byte on a socket, as a scanner or a broken client sends them: every
 * method Bun's parser lets through gets the app's 405 problem+json with `Allow`, and what the
 * parser answers itself, before the app, is exactly what api/README.md lists.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { createApiHarness, STAKER } from "./support.ts";

let api: Awaited<ReturnType<typeof createApiHarness>>;
let server: ReturnType<typeof api.app.listen>;

beforeAll(async () => {
  api = await createApiHarness();
  await api.setCheckpoint(100n);
  server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await server.stop(true);
  await api.close();
});

/** Everything the server wrote before it closed the connection ("" when it wrote nothing). */
function exchange(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.server!.port!, "127.0.0.1", () => socket.write(request));
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

const request = (head: string) => `${head}\r\nHost: api\r\nConnection: close\r\n\r\n`;
const statusOf = (answer: string) => answer.split("\r\n", 1)[0] ?? "";
const headerOf = (answer: string, name: string) =>
  new RegExp(`\r\n${name}: ([^\r]*)`, "i").exec(answer)?.[1];

/** Bun 1.4's list of methods (src/http/Method.zig), less the three the API serves. */
const OTHER_METHODS = [
  "ACL",
  "BIND",
  "CHECKOUT",
  "CONNECT",
  "COPY",
  "DELETE",
  "LINK",
  "LOCK",
  "M-SEARCH",
  "MERGE",
  "MKACTIVITY",
  "MKCALENDAR",
  "MKCOL",
  "MOVE",
  "NOTIFY",
  "PATCH",
  "POST",
  "PROPFIND",
  "PROPPATCH",
  "PURGE",
  "PUT",
  "QUERY",
  "REBIND",
  "REPORT",
  "SEARCH",
  "SOURCE",
  "SUBSCRIBE",
  "TRACE",
  "UNBIND",
  "UNLINK",
  "UNLOCK",
  "UNSUBSCRIBE",
];

const PATHS = [
  `/v1/staking/citizens?address=${STAKER}`,
  `/v1/staking/citizens/s1/1?address=${STAKER}`,
  `/v1/staking/citizens/stream?address=${STAKER}`,
  "/healthz",
  "/metrics",
  "/no/such/path",
];

describe("methods the app sees", () => {
  test("every method Bun passes on, other than GET, HEAD and OPTIONS, is 405 problem+json with Allow on every path", async () => {
    for (const path of PATHS) {
      for (const method of OTHER_METHODS) {
        const answer = await exchange(request(`${method} ${path} HTTP/1.1`));
        const where = `${method} ${path}`;
        expect(statusOf(answer), where).toBe("HTTP/1.1 405 Method Not Allowed");
        expect(headerOf(answer, "allow"), where).toBe("GET, HEAD, OPTIONS");
        expect(headerOf(answer, "content-type"), where).toBe("application/problem+json");
        const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as {
          status: number;
          detail: string;
        };
        expect(body.status, where).toBe(405);
        expect(body.detail, where).toContain(method);
      }
    }
  });
});

describe("long targets", () => {
  test("a path and query over 8,000 octets is the app's 414 problem+json, below Bun's 16 KiB", async () => {
    const target = `/v1/staking/citizens/s1/${"0".repeat(8_000)}1?address=${STAKER}`;
    const answer = await exchange(request(`GET ${target} HTTP/1.1`));
    expect(statusOf(answer)).toBe("HTTP/1.1 414 URI Too Long");
    expect(headerOf(answer, "content-type")).toBe("application/problem+json");
  });
});

/**
 * The requests Bun's parser answers before the app sees them: the label api/README.md gives
 * each, the bytes, and the answer as the README words it.
 */
const PARSER_CASES: { label: string; bytes: string; answer: string }[] = [
  {
    label: "an unknown method (`FOO / HTTP/1.1`)",
    bytes: request("FOO / HTTP/1.1"),
    answer: "closes the connection without a byte",
  },
  {
    label: "a known method in lower case (`get / HTTP/1.1`)",
    bytes: request("get / HTTP/1.1"),
    answer: "closes the connection without a byte",
  },
  {
    label: "the HTTP/2 preface over HTTP/1 (`PRI * HTTP/2.0`)",
    bytes: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    answer: "400",
  },
  {
    label: "another HTTP version (`GET / HTTP/2.0`)",
    bytes: request("GET / HTTP/2.0"),
    answer: "505",
  },
  {
    label: "a control character in the target",
    bytes: request("GET /he\u0001lthz HTTP/1.1"),
    answer: "505",
  },
  {
    label: "lines ending in a bare LF",
    bytes: "GET /healthz HTTP/1.1\nHost: api\nConnection: close\n\n",
    answer: "505",
  },
  {
    label: "two spaces in the request line",
    bytes: request("GET  /healthz HTTP/1.1"),
    answer: "400",
  },
  {
    label: "the asterisk form (`OPTIONS * HTTP/1.1`)",
    bytes: request("OPTIONS * HTTP/1.1"),
    answer: "400",
  },
  {
    label: "an HTTP/1.1 request without `Host`",
    bytes: "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n",
    answer: "400",
  },
  {
    label: "a header name with a space",
    bytes: "GET /healthz HTTP/1.1\r\nHost: api\r\nBad Name: x\r\nConnection: close\r\n\r\n",
    answer: "400",
  },
  {
    label: "a `Content-Length` that is not a number",
    bytes: "POST /healthz HTTP/1.1\r\nHost: api\r\nContent-Length: x\r\nConnection: close\r\n\r\n",
    answer: "400",
  },
  {
    label: "both `Content-Length` and `Transfer-Encoding: chunked`",
    bytes:
      "POST /healthz HTTP/1.1\r\nHost: api\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n",
    answer: "400",
  },
  {
    label: "a request line and headers over 16 KiB",
    bytes: request(`GET /${"a".repeat(17_000)} HTTP/1.1`),
    answer: "431",
  },
];

describe("requests Bun's parser answers before the app", () => {
  for (const { label, bytes, answer } of PARSER_CASES) {
    test(`${label}: ${answer}, as api/README.md says`, async () => {
      const got = await exchange(bytes);
      if (answer.startsWith("closes")) expect(got).toBe("");
      else expect(statusOf(got)).toStartWith(`HTTP/1.1 ${answer} `);
      const readme = await Bun.file(new URL("../../api/README.md", import.meta.url)).text();
      expect(readme).toContain(`| ${label} | ${answer} |`);
    });
  }
});
