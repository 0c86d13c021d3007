import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { version as UI_VERSION } from "swagger-ui-dist/package.json";
import type { ProblemBody } from "../../api/problems.ts";
import { createApiHarness, json, STAKER } from "./support.ts";

let api: Awaited<ReturnType<typeof createApiHarness>>;

beforeAll(async () => {
  api = await createApiHarness();
  await api.setCheckpoint(99n);
  await api.insertCitizens([{ season: 1, citizenId: 1n }]);
});

afterAll(() => api.close());

async function expectProblem(response: Response, status: number): Promise<ProblemBody> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const body = await json<ProblemBody>(response);
  // A copy: Bun 1.4.5's toMatchObject writes its asymmetric matchers into the object it checks.
  expect({ ...body }).toMatchObject({
    status,
    title: expect.any(String),
    detail: expect.any(String),
  });
  expect(body.type).toStartWith("https://");
  return body;
}

const single = (id: string, address = STAKER) => `/v1/staking/citizens/s1/${id}?address=${address}`;
const list = (query: string) => `/v1/staking/citizens?address=${STAKER}${query}`;

describe("authentication", () => {
  /** [case, Authorization header (null: none), expected challenge] */
  const cases: [string, () => string | null, string][] = [
    ["no Authorization header", () => null, "Bearer"],
    ["another scheme", () => `Basic ${btoa("a:b")}`, "Bearer"],
    ["two spaces", () => `Bearer  ${api.token}`, 'Bearer error="invalid_token"'],
    ["scheme alone", () => "Bearer", 'Bearer error="invalid_token"'],
    ["a 10 kB token", () => `Bearer ${"a".repeat(10_240)}`, 'Bearer error="invalid_token"'],
    ["non-ASCII token", () => "Bearer tökén-ÿ", 'Bearer error="invalid_token"'],
    ["unknown token", () => "Bearer cs_not-a-token", 'Bearer error="invalid_token"'],
    ["token plus junk", () => `Bearer ${api.token} x`, 'Bearer error="invalid_token"'],
  ];

  for (const [name, authorization, challenge] of cases) {
    test(`${name} is 401 with the challenge ${challenge}`, async () => {
      const header = authorization();
      const headers: Record<string, string> = header === null ? {} : { authorization: header };
      const response = await api.app.handle(
        new Request(`http://localhost${single("1")}`, { headers }),
      );
      await expectProblem(response, 401);
      expect(response.headers.get("www-authenticate")).toBe(challenge);
    });
  }

  test("a token in the query string is not accepted", async () => {
    const response = await api.app.handle(
      new Request(`http://localhost${single("1")}&access_token=${api.token}`),
    );
    await expectProblem(response, 401);
  });

  test("authentication comes before validation: no token and a bad address is 401", async () => {
    const response = await api.app.handle(
      new Request("http://localhost/v1/staking/citizens/s1/1?address=0x12"),
    );
    await expectProblem(response, 401);
  });

  test("a valid token is served", async () => {
    expect((await api.request(single("1"))).status).toBe(200);
  });

  test("the scheme is compared case-insensitively: bearer and BEARER work too", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      const response = await api.request(single("1"), {
        headers: { authorization: `${scheme} ${api.token}` },
      });
      expect(response.status).toBe(200);
    }
  });

  test("an unknown token with a bad parameter is 401, not 400", async () => {
    const response = await api.request("/v1/staking/citizens/s1/1?address=0x12", {
      headers: { authorization: "Bearer cs_not-a-token" },
    });
    await expectProblem(response, 401);
    expect(response.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
  });
});

describe("address", () => {
  const hex40 = "ab".repeat(20);
  const bad: [string, string | undefined][] = [
    ["missing", undefined],
    ["empty", ""],
    ["41 characters", `0x${hex40.slice(1)}`],
    ["43 characters", `0x${hex40}a`],
    ["42 characters, not hex", `0x${"g".repeat(40)}`],
    ["42 characters without 0x", `00${hex40}`],
    ["0X prefix", `0X${hex40}`],
    ["with spaces", `%200x${hex40.slice(1)}`],
    ["SQL", `0x${hex40.slice(0, 30)}'%20or%20'1`],
  ];
  for (const [name, address] of bad) {
    for (const path of [
      "/v1/staking/citizens/s1/1",
      "/v1/staking/citizens/s2/1",
      "/v1/staking/citizens",
    ]) {
      test(`${name} is 400 on ${path}`, async () => {
        const query = address === undefined ? "" : `?address=${address}`;
        const body = await expectProblem(await api.request(`${path}${query}`), 400);
        expect(body.parameter).toBe("address");
      });
    }
  }
});

describe("citizen id", () => {
  const bad: [string, string][] = [
    ["-1", "-1"],
    ["1e3", "1e3"],
    ["0x10", "0x10"],
    ["2^256", "115792089237316195423570985008687907853269984665640564039457584007913129639936"],
    ["79 digits", "1".repeat(79)],
    ["unicode digits", encodeURIComponent("١٢٣")],
    ["fullwidth digits", encodeURIComponent("１２")],
    ["SQL", encodeURIComponent("1;drop table staked_citizens")],
    ["SQL or", encodeURIComponent("1 or 1=1")],
    ["leading +", encodeURIComponent("+1")],
    ["leading space", "%201"],
    ["trailing space", "1%20"],
    ["a fraction", "1.0"],
    ["a lone %", "%"],
    ["bad percent-encoding", "%zz"],
  ];
  for (const [name, id] of bad) {
    test(`${name} is 400`, async () => {
      const body = await expectProblem(await api.request(single(id)), 400);
      expect(body.parameter).toBe("id");
    });
  }

  test("an empty id is 400", async () => {
    for (const season of ["s1", "s2"]) {
      const path = `/v1/staking/citizens/${season}/?address=${STAKER}`;
      const body = await expectProblem(await api.request(path), 400);
      expect(body.parameter).toBe("id");
    }
  });

  test("the largest uint256 is a valid id (not staked: 404)", async () => {
    const max = (2n ** 256n - 1n).toString();
    await expectProblem(await api.request(single(max)), 404);
  });

  test("the same number gets the same answer however many leading zeros it carries", async () => {
    const plain = await api.request(single("1"));
    expect(plain.status).toBe(200);
    const body = await plain.text();
    for (const zeros of [1, 77, 78, 79, 200, 7_000]) {
      const padded = await api.request(single(`${"0".repeat(zeros)}1`));
      expect({ zeros, status: padded.status }).toEqual({ zeros, status: 200 });
      expect(await padded.text()).toBe(body);
    }
    const max = (2n ** 256n - 1n).toString();
    const beyond = (2n ** 256n).toString();
    for (const zeros of [0, 1, 100]) {
      await expectProblem(await api.request(single(`${"0".repeat(zeros)}${max}`)), 404);
      const body = await expectProblem(
        await api.request(single(`${"0".repeat(zeros)}${beyond}`)),
        400,
      );
      expect(body.parameter).toBe("id");
    }
  });

  test("a path and query over 8,000 octets is 414 problem+json, whatever the path", async () => {
    const fits = single(`${"0".repeat(8_000 - single("1").length)}1`);
    expect(fits.length).toBe(8_000);
    expect((await api.request(fits)).status).toBe(200);
    for (const path of [
      single(`${"0".repeat(8_001 - single("1").length)}1`),
      `/${"a".repeat(8_000)}`,
    ]) {
      const body = await expectProblem(await api.request(path), 414);
      expect(body.detail).toContain("8000");
    }
  });

  test("an unknown token is 401 before an id beyond uint256 or a malformed cursor is judged", async () => {
    const headers = { authorization: "Bearer cs_not-a-token" };
    for (const path of [single((2n ** 256n).toString()), list("&cursor=abc")]) {
      const response = await api.request(path, { headers });
      await expectProblem(response, 401);
      expect(response.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    }
  });
});

describe("listing parameters", () => {
  const bad: [string, string, string][] = [
    ["type", "&type=s3", "type"],
    ["type in capitals", "&type=S1", "type"],
    ["empty type", "&type=", "type"],
    ["sort", "&sort=points", "sort"],
    ["order", "&order=up", "order"],
    ["limit 0", "&limit=0", "limit"],
    ["limit 101", "&limit=101", "limit"],
    ["limit -1", "&limit=-1", "limit"],
    ["limit 1.5", "&limit=1.5", "limit"],
    ["limit 1e1", "&limit=1e1", "limit"],
    ["limit abc", "&limit=abc", "limit"],
    ["cursor not base64url", "&cursor=!!!", "cursor"],
    ["cursor junk", "&cursor=abc", "cursor"],
    ["cursor too long", `&cursor=${"a".repeat(600)}`, "cursor"],
    [
      "cursor of another sort",
      `&sort=totalPoints&cursor=${Buffer.from('{"s":"id","o":"asc","k":["1","1"]}').toString("base64url")}`,
      "cursor",
    ],
    [
      "cursor with a non-number key",
      `&cursor=${Buffer.from('{"s":"id","o":"asc","k":["1;drop","1"]}').toString("base64url")}`,
      "cursor",
    ],
    [
      "cursor with a key beyond uint256",
      `&cursor=${Buffer.from(`{"s":"id","o":"asc","k":["${2n ** 256n}","1"]}`).toString("base64url")}`,
      "cursor",
    ],
  ];
  for (const [name, query, parameter] of bad) {
    test(`${name} is 400`, async () => {
      const body = await expectProblem(await api.request(list(query)), 400);
      expect(body.parameter).toBe(parameter);
    });
  }

  test("limits 1 and 100 are accepted", async () => {
    expect((await api.request(list("&limit=1"))).status).toBe(200);
    expect((await api.request(list("&limit=100"))).status).toBe(200);
  });
});

describe("query parameters an endpoint does not take", () => {
  const bases = [
    `/v1/staking/citizens/s1/1?address=${STAKER}`,
    `/v1/staking/citizens/s2/1?address=${STAKER}`,
    `/v1/staking/citizens?address=${STAKER}`,
    `/v1/staking/citizens/stream?address=${STAKER}`,
  ];

  test("an unknown parameter is 400 naming it, on every endpoint", async () => {
    for (const base of bases) {
      for (const extra of ["foo=1", "limt=5", "address2=x", "=x", "access_token=abc"]) {
        const name = extra.slice(0, extra.indexOf("="));
        const body = await expectProblem(await api.request(`${base}&${extra}`), 400);
        expect({ base, parameter: body.parameter }).toEqual({ base, parameter: name });
        expect(body.detail).toContain("is not a parameter of this endpoint; it takes address");
      }
    }
  });

  test("the stream refuses ?block= rather than ignore it", async () => {
    const body = await expectProblem(await api.request(`${bases[3]}&block=5`), 400);
    expect(body).toMatchObject({
      parameter: "block",
      detail: expect.stringContaining("takes address"),
    });
  });

  test("a parameter given twice is 400 naming it, even with the same value or encoded", async () => {
    const other = "0x0000000000000000000000000000000000000001";
    const repeats: [string, string, string][] = [
      ...bases.map((base): [string, string, string] => [base, `&address=${other}`, "address"]),
      ...bases.map((base): [string, string, string] => [base, `&address=${STAKER}`, "address"]),
      [bases[0]!, `&%61ddress=${STAKER}`, "address"],
      [bases[0]!, "&block=5&block=5", "block"],
      [bases[1]!, "&block=5&block=6", "block"],
      [bases[2]!, "&block=5&block=5", "block"],
      [bases[2]!, "&type=s1&type=s2", "type"],
      [bases[2]!, "&sort=id&sort=id", "sort"],
      [bases[2]!, "&order=asc&order=desc", "order"],
      [bases[2]!, "&limit=1&limit=2", "limit"],
      [bases[2]!, "&cursor=abc&cursor=abc", "cursor"],
    ];
    for (const [base, extra, parameter] of repeats) {
      const body = await expectProblem(await api.request(`${base}${extra}`), 400);
      expect({ extra, parameter: body.parameter }).toEqual({ extra, parameter });
      expect(body.detail).toBe(`${parameter} is given more than once; give it once`);
    }
  });

  test("the token is judged first: an unknown or missing token with an unknown parameter is 401", async () => {
    for (const base of bases) {
      const unknownToken: Record<string, string> = { authorization: "Bearer cs_not-a-token" };
      for (const headers of [unknownToken, {}]) {
        const response = await api.app.handle(
          new Request(`http://localhost${base}&foo=1&address=x`, { headers }),
        );
        await expectProblem(response, 401);
      }
    }
  });

  test("health probes take any query (a load balancer may add a cache-buster)", async () => {
    for (const path of ["/healthz?x=1", "/healthz?x=1&x=2"]) {
      expect((await api.request(path)).status).toBe(200);
    }
  });
});

describe("paths and methods", () => {
  test("an unknown path is 404 problem+json", async () => {
    for (const path of ["/nope", "/v1/staking/citizens/s3/1", "/v1/staking/citizens/s1/1/extra"]) {
      await expectProblem(await api.request(path), 404);
    }
  });

  test("methods other than GET/HEAD/OPTIONS are 405 with Allow", async () => {
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      for (const path of [single("1"), "/healthz", "/nope"]) {
        const response = await api.request(path, {
          method,
          body: method === "DELETE" ? null : "{}",
        });
        await expectProblem(response, 405);
        expect(response.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
      }
    }
  });

  test("OPTIONS answers 204 with Allow", async () => {
    const response = await api.request(single("1"), { method: "OPTIONS" });
    expect(response.status).toBe(204);
    expect(response.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
  });

  test("HEAD is served like GET, without a body", async () => {
    const response = await api.request(single("1"), { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
  });

  test("errors after authentication carry X-Indexed-Block", async () => {
    const response = await api.request(list("&limit=0"));
    expect(response.headers.get("x-indexed-block")).toBe("99");
  });
});

describe("docs assets", () => {
  const asset = (name: string) => `/docs/assets/${UI_VERSION}/${name}`;

  test("the two files are served for long", async () => {
    for (const name of ["swagger-ui-bundle.js", "swagger-ui.css"]) {
      const response = await api.request(asset(name));
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toContain("immutable");
      expect((await response.text()).length).toBeGreaterThan(1_000);
    }
  });

  test("every name Object.prototype holds is 404 problem+json, never cached for long", async () => {
    const names = Object.getOwnPropertyNames(Object.prototype);
    expect(names).toEqual(expect.arrayContaining(["constructor", "__proto__", "toString"]));
    for (const name of [...names, "nope.js"]) {
      const response = await api.request(asset(name));
      await expectProblem(response, 404);
      expect(response.headers.get("cache-control") ?? "").not.toContain("immutable");
    }
  });
});
