/**
 * The API's /metrics, in process: requests counted by route pattern and status (never by raw
 * path), latency observed, the pool and the response cache reported.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiHarness, STAKER } from "./support.ts";

let api: Awaited<ReturnType<typeof createApiHarness>>;

beforeAll(async () => {
  api = await createApiHarness();
  await api.setCheckpoint(100n);
  await api.insertCitizens([{ season: 1, citizenId: 7n }]);
});

afterAll(() => api.close());

/** The value of one sample, `name{labels}` exactly as printed. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("GET /metrics", () => {
  test("counts requests by route pattern and status, and reports latency, pool and cache", async () => {
    const citizen = `/v1/staking/citizens/s1/7?address=${STAKER}`;
    expect((await api.request(citizen)).status).toBe(200);
    expect((await api.request(citizen)).status).toBe(200);
    expect((await api.request(`/v1/staking/citizens/s1/8?address=${STAKER}`)).status).toBe(404);
    expect((await api.request("/no/such/path")).status).toBe(404);
    // Counted after the response is sent.
    await Bun.sleep(20);

    const response = await api.request("/metrics", { headers: { authorization: "" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    const text = await response.text();
    const route = 'method="GET",route="/v1/staking/citizens/s1/:id"';
    expect(sample(text, `citizen_staking_api_requests_total{${route},status="200"}`)).toBe(2);
    expect(sample(text, `citizen_staking_api_requests_total{${route},status="404"}`)).toBe(1);
    expect(
      sample(
        text,
        'citizen_staking_api_requests_total{method="GET",route="unmatched",status="404"}',
      ),
    ).toBe(1);
    expect(text).not.toContain("/s1/7");
    expect(sample(text, `citizen_staking_api_request_duration_seconds_count{${route}}`)).toBe(3);
    expect(sample(text, "citizen_staking_db_pool_max_connections")).toBe(4);
    expect(sample(text, 'citizen_staking_api_cache_lookups_total{result="hit"}')).toBeGreaterThan(
      0,
    );
    expect(sample(text, "citizen_staking_api_cache_entries")).toBeGreaterThan(0);
  });
});
