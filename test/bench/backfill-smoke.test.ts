import { describe, expect, test } from "bun:test";
import { expectReport, runSmoke } from "./smoke.ts";

type RealRun = {
  workers: number;
  path: "direct" | "counting" | "latency";
  proxyDelayMs: number;
  events: number;
  citizenStakes: number;
  workerCpuMicrosPerEvent: number | null;
  workerPeakRssBytes: number[];
  rpc: null | {
    httpRequests: number;
    calls: number;
    callsByMethod: Record<string, number>;
    ethCalls: number;
    duplicateEthCalls: number;
    viewCalls: number;
    duplicateViewCalls: number;
    ethCallsPerCitizenStake: number | null;
    abandonedRequests: number;
    slowestRequestMs: number;
    requestBytes: number;
    responseBytes: number;
  };
};

type LimitRun = {
  events: number;
  chunks: number;
  seconds: number;
  eventsPerSecond: number;
  roundsEventsPerSecond: number[];
};

/** What the backfill bench must report for every run, whatever its speed. */
function expectSaneRun(run: RealRun, limitEvents: number) {
  expect(run.events).toBe(limitEvents);
  expect(run.citizenStakes).toBeGreaterThan(0);
  expect(run.citizenStakes).toBeLessThan(run.events);
  expect(run.workerCpuMicrosPerEvent).toBeGreaterThan(0);
  expect(Number.isFinite(run.workerCpuMicrosPerEvent)).toBe(true);
  expect(run.workerPeakRssBytes).toHaveLength(run.workers);
  for (const bytes of run.workerPeakRssBytes) expect(bytes).toBeGreaterThan(10 * 1024 * 1024);
}

/** ...and for every run whose calls went through a proxy, what the workers asked the node. */
function expectCountedRun(run: RealRun, limitEvents: number) {
  expectSaneRun(run, limitEvents);
  const { rpc } = run;
  if (!rpc) throw new Error(`the ${run.path} run has no counts`);
  expect(rpc.httpRequests).toBeGreaterThan(0);
  expect(rpc.calls).toBeGreaterThanOrEqual(rpc.httpRequests);
  expect(Object.values(rpc.callsByMethod).reduce((sum, n) => sum + n, 0)).toBe(rpc.calls);
  expect(rpc.callsByMethod.eth_getLogs).toBeGreaterThan(0);
  expect(rpc.callsByMethod.eth_call).toBe(rpc.ethCalls);
  expect(rpc.ethCalls).toBeGreaterThan(0);
  expect(rpc.viewCalls).toBeGreaterThanOrEqual(rpc.ethCalls);
  expect(Number.isInteger(rpc.duplicateEthCalls)).toBe(true);
  expect(rpc.duplicateEthCalls).toBeGreaterThanOrEqual(0);
  expect(rpc.duplicateEthCalls).toBeLessThan(rpc.ethCalls);
  expect(rpc.duplicateViewCalls).toBeLessThan(rpc.viewCalls);
  expect(rpc.abandonedRequests).toBeGreaterThanOrEqual(0);
  expect(rpc.abandonedRequests).toBeLessThanOrEqual(rpc.httpRequests);
  expect(rpc.slowestRequestMs).toBeGreaterThanOrEqual(run.proxyDelayMs);
  expect(rpc.requestBytes).toBeGreaterThan(0);
  expect(rpc.responseBytes).toBeGreaterThan(0);
  expect(rpc.ethCallsPerCitizenStake).toBe(
    Math.round((rpc.ethCalls / run.citizenStakes) * 1e4) / 1e4,
  );
  expect(Number.isFinite(rpc.ethCallsPerCitizenStake)).toBe(true);
}

describe("benchmarks in smoke size", () => {
  test("the backfill bench completes and reports each worker count and the latency run against the limit, with what the workers asked the node", async () => {
    const report = await runSmoke("backfill");
    expect(report.parameters.events).toEqual([2000]);
    expectReport(report, [
      "real_w1_over_limit@2000",
      "real_w2_over_limit@2000",
      "real_w1_over_direct_limit@2000",
      "latency_over_latency_limit@2000",
      "latency_over_direct_limit@2000",
      "control_w1_over_direct_limit@2000",
    ]);
    const [size] = report.raw.sizes as {
      limit: { direct: LimitRun; counting: LimitRun; latency: LimitRun };
      real: RealRun[];
      control: RealRun;
      latency: RealRun;
    }[];
    const { limit, real, control, latency } = size!;
    expect(real.map((run) => run.workers)).toEqual([1, 2]);
    for (const run of [...real, latency]) expectCountedRun(run, limit.direct.events);
    expect(real.every((run) => run.path === "counting" && run.proxyDelayMs === 0)).toBe(true);
    expect(latency.path).toBe("latency");
    expect(latency.proxyDelayMs).toBe(40);
    expectSaneRun(control, limit.direct.events);
    expect(control.path).toBe("direct");
    expect(control.rpc).toBeNull();
    // Every raw fetch through the latency proxy waits 40 ms, one after another.
    expect(limit.latency.seconds).toBeGreaterThanOrEqual(limit.latency.chunks * 0.04);
    expect(limit.counting.events).toBe(limit.direct.events);
    // The limit keeps each path's fastest of its rounds.
    for (const path of [limit.direct, limit.counting, limit.latency]) {
      expect(path.roundsEventsPerSecond.length).toBeGreaterThan(1);
      expect(path.eventsPerSecond).toBe(Math.max(...path.roundsEventsPerSecond));
    }
  }, 300_000);
});
