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
    expect(sample(text, 'citizen_staking_db_pool_max_connections{pool="main"}')).toBe(4);
    expect(sample(text, 'citizen_staking_db_pool_max_connections{pool="reads"}')).toBe(4);
    expect(sample(text, 'citizen_staking_api_cache_lookups_total{result="hit"}')).toBeGreaterThan(
      0,
    );
    expect(sample(text, "citizen_staking_api_cache_entries")).toBeGreaterThan(0);
  });
});

describe("the chain gauges", () => {
  test("the API reports the indexed block, the head it last saw and the lag under the indexer's names", async () => {
    let head: bigint | Error = 130n;
    const node = await createApiHarness({
      databaseUrl: api.databaseUrl,
      chainHead: async () => {
        if (head instanceof Error) throw head;
        return head;
      },
    });
    const scrape = async () => {
      const response = await node.request("/metrics", { headers: { authorization: "" } });
      expect(response.status).toBe(200);
      return response.text();
    };
    try {
      await api.setCheckpoint(120n);
      let text = await scrape();
      expect(sample(text, "citizen_staking_indexed_block")).toBe(120);
      expect(sample(text, "citizen_staking_head_block")).toBe(130);
      expect(sample(text, "citizen_staking_lag_blocks")).toBe(10);
      expect(sample(text, "citizen_staking_node_up")).toBe(1);

      // Read at each scrape: the checkpoint moves in Postgres, nothing tells the API.
      await api.setCheckpoint(125n);
      head = 131n;
      text = await scrape();
      expect(sample(text, "citizen_staking_indexed_block")).toBe(125);
      expect(sample(text, "citizen_staking_lag_blocks")).toBe(6);

      // A node that does not answer: node_up 0, the head and lag it last saw stay.
      head = new Error("connect ECONNREFUSED");
      text = await scrape();
      expect(sample(text, "citizen_staking_node_up")).toBe(0);
      expect(sample(text, "citizen_staking_head_block")).toBe(131);
      expect(sample(text, "citizen_staking_lag_blocks")).toBe(6);
    } finally {
      await node.close();
    }
  });

  test("every metric of the operators' example alert is in the API's own scrape", async () => {
    const node = await createApiHarness({
      databaseUrl: api.databaseUrl,
      chainHead: async () => 200n,
    });
    try {
      const guide = await Bun.file(new URL("../../docs/operators.md", import.meta.url)).text();
      const alert = /```yaml\n([\s\S]*?)```/.exec(guide.slice(guide.indexOf("## Metrics")))?.[1];
      const expr = /expr: (.*)/.exec(alert ?? "")?.[1];
      const metrics = expr?.match(/citizen_staking_\w+/g) ?? [];
      expect(metrics.length).toBeGreaterThan(0);
      const response = await node.request("/metrics", { headers: { authorization: "" } });
      const text = await response.text();
      for (const metric of metrics) {
        expect(text.split("\n").some((line) => line.startsWith(`${metric} `))).toBe(true);
      }
    } finally {
      await node.close();
    }
  });
});
