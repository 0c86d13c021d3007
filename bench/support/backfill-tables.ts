/**
 * The backfill bench's figures beside issue 12's targets: one table of runs per scenario size,
 * one summary with the sizes side by side, and the flat ratios of the JSON report. Targets are
 * printed with a verdict, never asserted.
 */
import type { RealRun, SizeRun } from "../backfill.ts";
import { round, table } from "./report.ts";

export const TARGETS = {
  /** Backfill events/s over raw eth_getLogs + COPY of the same logs, at least. */
  backfillOverLimit: 0.2,
  /** eth_call requests per citizen (S1/S2) Stake event, at most. */
  ethCallsPerCitizenStake: 0.3,
  /** eth_calls with the same `to`, `data` and block as an earlier one, at most. */
  duplicateEthCalls: 0,
  /** Worker processes' CPU per event, at most. */
  workerCpuMicrosPerEvent: 60,
  /** Peak RSS of any one worker process at 100,000 events, below (and flat as events grow). */
  workerPeakRssMb: 250,
};

const MB = 1024 * 1024;

const peakMb = (run: RealRun) => Math.max(...run.workerPeakRssBytes) / MB;

function verdict(value: number | null, met: (value: number) => boolean): string {
  if (value === null || !Number.isFinite(value)) return "-";
  return `${value} (${met(value) ? "met" : "NOT met"})`;
}

const atLeast = (target: number) => (value: number) => value >= target;
const atMost = (target: number) => (value: number) => value <= target;

/** The run with the most events/s among the worker counts. */
function fastest(runs: RealRun[]): RealRun | undefined {
  return [...runs].sort((a, b) => b.eventsPerSecond - a.eventsPerSecond)[0];
}

/** The largest figure among the runs, and which run it came from. */
function mostIn(runs: RealRun[], figure: (real: RealRun) => number) {
  const [top] = [...runs].sort((a, b) => figure(b) - figure(a));
  return top ? { value: figure(top), run: runLabel(top) } : null;
}

/** One size's headline figures; the one-worker run where one run has to speak for the size. */
function headline(run: SizeRun) {
  const one = run.real.find((real) => real.workers === 1) ?? run.real[0];
  const best = fastest(run.real);
  const over = (eventsPerSecond: number | undefined, limit: number | undefined) =>
    eventsPerSecond !== undefined && limit ? round(eventsPerSecond / limit, 4) : null;
  const everyRun = run.latency ? [...run.real, run.latency] : run.real;
  return {
    events: run.spec.events,
    stakerEvents: one?.events ?? 0,
    citizenStakes: one?.citizenStakes ?? 0,
    oneWorkerEventsPerSecond: one?.eventsPerSecond ?? null,
    oneWorkerOverLimit: over(one?.eventsPerSecond, run.limit.counting.eventsPerSecond),
    fastestWorkers: best?.workers ?? null,
    fastestEventsPerSecond: best?.eventsPerSecond ?? null,
    fastestOverLimit: over(best?.eventsPerSecond, run.limit.counting.eventsPerSecond),
    fastestOverDirectLimit: over(best?.eventsPerSecond, run.limit.direct.eventsPerSecond),
    latencyEventsPerSecond: run.latency?.eventsPerSecond ?? null,
    latencyOverLatencyLimit: over(run.latency?.eventsPerSecond, run.limit.latency?.eventsPerSecond),
    latencyOverDirectLimit: over(run.latency?.eventsPerSecond, run.limit.direct.eventsPerSecond),
    ethCallsPerCitizenStake: one?.rpc.ethCallsPerCitizenStake ?? null,
    ethCallsPerEvent: one?.rpc.ethCallsPerEvent ?? null,
    duplicateEthCalls: one?.rpc.duplicateEthCalls ?? null,
    duplicateEthCallsMostInARun: mostIn(everyRun, (real) => real.rpc.duplicateEthCalls),
    abandonedRequestsMostInARun: mostIn(everyRun, (real) => real.rpc.abandonedRequests),
    viewCallsPerCitizenStake: one?.rpc.viewCallsPerCitizenStake ?? null,
    duplicateViewCalls: one?.rpc.duplicateViewCalls ?? null,
    oneWorkerCpuMicrosPerEvent: one?.workerCpuMicrosPerEvent ?? null,
    oneWorkerPeakRssMb: one ? round(peakMb(one), 1) : null,
    workerPeakRssMb: round(Math.max(...everyRun.map(peakMb)), 1),
  };
}

export function summarize(runs: SizeRun[]) {
  return runs.map(headline);
}

/** Flat ratios for the JSON report, named `<figure>@<events>`. */
export function ratiosOf(runs: SizeRun[]): Record<string, number | null> {
  const ratios: Record<string, number | null> = {};
  for (const run of runs) {
    const at = `@${run.spec.events}`;
    const { direct, counting, latency } = run.limit;
    for (const real of run.real) {
      ratios[`real_w${real.workers}_over_limit${at}`] = round(
        real.eventsPerSecond / counting.eventsPerSecond,
        4,
      );
      ratios[`real_w${real.workers}_over_direct_limit${at}`] = round(
        real.eventsPerSecond / direct.eventsPerSecond,
        4,
      );
    }
    if (run.latency && latency) {
      ratios[`latency_over_latency_limit${at}`] = round(
        run.latency.eventsPerSecond / latency.eventsPerSecond,
        4,
      );
      ratios[`latency_over_direct_limit${at}`] = round(
        run.latency.eventsPerSecond / direct.eventsPerSecond,
        4,
      );
    }
    const reproject = run.real[0]?.reproject;
    if (reproject) {
      ratios[`reproject_over_limit${at}`] = round(
        reproject.eventsPerSecond / direct.eventsPerSecond,
        4,
      );
    }
  }
  return ratios;
}

/** Every run on one size: the limits, the reproject, each worker count, the latency run. */
export function runTable(run: SizeRun): string {
  const { direct, counting, latency } = run.limit;
  const latencyMs = run.latency?.proxyDelayMs ?? 0;
  const rows: (string | number)[][] = [
    [
      "run",
      "seconds",
      "events/s",
      "/ limit same path",
      "/ direct limit",
      "eth_call/stake",
      "dup eth_call",
      "eth_call/event",
      "views/stake",
      "dup views",
      "HTTP req (abandoned)",
      "CPU µs/event",
      "peak RSS MB per worker",
    ],
  ];
  const limitRow = (name: string, limit: typeof direct) => [
    name,
    limit.seconds,
    limit.eventsPerSecond,
    1,
    round(limit.eventsPerSecond / direct.eventsPerSecond, 3),
    "-",
    "-",
    "-",
    "-",
    "-",
    limit.chunks,
    "-",
    "-",
  ];
  const realRow = (name: string, real: RealRun, limit: typeof direct) => [
    name,
    real.seconds,
    real.eventsPerSecond,
    round(real.eventsPerSecond / limit.eventsPerSecond, 4),
    round(real.eventsPerSecond / direct.eventsPerSecond, 4),
    real.rpc.ethCallsPerCitizenStake ?? "-",
    real.rpc.duplicateEthCalls,
    real.rpc.ethCallsPerEvent ?? "-",
    real.rpc.viewCallsPerCitizenStake ?? "-",
    real.rpc.duplicateViewCalls,
    `${real.rpc.httpRequests} (${real.rpc.abandonedRequests})`,
    real.workerCpuMicrosPerEvent ?? "-",
    real.workerPeakRssBytes.map((bytes) => (bytes / MB).toFixed(0)).join(" / "),
  ];
  rows.push(limitRow("limit: eth_getLogs + COPY, direct", direct));
  rows.push(limitRow("limit, through the counting proxy", counting));
  if (latency) rows.push(limitRow(`limit, through the ${latencyMs} ms proxy`, latency));
  const first = run.real[0];
  if (first) {
    rows.push([
      "reproject (stored events and reads, no RPC)",
      first.reproject.seconds,
      first.reproject.eventsPerSecond,
      "-",
      round(first.reproject.eventsPerSecond / direct.eventsPerSecond, 3),
      "-",
      "-",
      "-",
      "-",
      "-",
      0,
      "-",
      "-",
    ]);
  }
  for (const real of run.real) {
    rows.push(realRow(`backfill, ${workersLabel(real)}`, real, counting));
  }
  if (run.latency && latency) {
    rows.push(
      realRow(
        `backfill, ${workersLabel(run.latency)}, ${latencyMs} ms proxy`,
        run.latency,
        latency,
      ),
    );
  }
  const everyRun = [...run.real, ...(run.latency ? [run.latency] : [])];
  const runName = (real: RealRun) =>
    `  ${workersLabel(real)}${real.proxyDelayMs > 0 ? `, ${real.proxyDelayMs} ms proxy` : ""}`;
  return [
    `backfill of ${first?.events ?? direct.events} staker events (${first?.citizenStakes ?? "?"} citizen stakes) over blocks ${run.fromBlock}..${run.head}, ${first?.chunks ?? "?"} chunks`,
    "(views: the contract calls inside the eth_calls, each call of a multicall counted; abandoned:",
    " HTTP requests whose client timed out before the node answered, and asked again)",
    "",
    table(rows),
    "",
    "JSON-RPC calls by method (each batch element counted), and the slowest HTTP request:",
    ...everyRun.map(
      (real) =>
        `${runName(real)}: ${counts(real.rpc.callsByMethod)}; slowest ${real.rpc.slowestRequestMs} ms`,
    ),
    "contract calls inside the eth_calls, by function:",
    ...everyRun.map((real) => `${runName(real)}: ${counts(real.rpc.viewCallsByFunction)}`),
  ].join("\n");
}

function most(figure: { value: number; run: string } | null): string {
  return figure ? `${figure.value} (${figure.run})` : "-";
}

function runLabel(real: RealRun): string {
  return `${real.workers}w${real.proxyDelayMs > 0 ? `, ${real.proxyDelayMs} ms` : ""}`;
}

function workersLabel(real: RealRun): string {
  return `${real.workers} worker${real.workers > 1 ? "s" : ""} x ${real.concurrencyPerWorker}`;
}

function counts(byName: Record<string, number>): string {
  return Object.entries(byName)
    .sort(([, a], [, b]) => b - a)
    .map(([method, count]) => `${method} ${count}`)
    .join(", ");
}

/** The sizes side by side, each figure beside its target (peak RSS side by side shows flatness). */
export function summaryTable(runs: SizeRun[]): string {
  const figures = summarize(runs);
  const latencyMs = runs.find((run) => run.latency)?.latency?.proxyDelayMs;
  const row = (
    name: string,
    target: string,
    cell: (f: (typeof figures)[number]) => string | number,
  ) => [name, target, ...figures.map(cell)];
  const rows: (string | number)[][] = [
    ["figure", "target", ...figures.map((f) => `${f.events} events`)],
    row("citizen stakes (S1/S2 Stake events)", "-", (f) => f.citizenStakes),
    row("backfill events/s, 1 worker", "-", (f) => f.oneWorkerEventsPerSecond ?? "-"),
    row("  / limit (same path)", `>= ${TARGETS.backfillOverLimit}`, (f) =>
      verdict(f.oneWorkerOverLimit, atLeast(TARGETS.backfillOverLimit)),
    ),
    row("fastest worker count", "-", (f) => `${f.fastestWorkers}: ${f.fastestEventsPerSecond}/s`),
    row("  / limit (same path)", `>= ${TARGETS.backfillOverLimit}`, (f) =>
      verdict(f.fastestOverLimit, atLeast(TARGETS.backfillOverLimit)),
    ),
  ];
  if (latencyMs !== undefined) {
    rows.push(
      row(`backfill events/s, ${latencyMs} ms proxy`, "-", (f) => f.latencyEventsPerSecond ?? "-"),
      row("  / limit through the same proxy", `>= ${TARGETS.backfillOverLimit}`, (f) =>
        verdict(f.latencyOverLatencyLimit, atLeast(TARGETS.backfillOverLimit)),
      ),
      row("  / direct limit", `>= ${TARGETS.backfillOverLimit}`, (f) =>
        verdict(f.latencyOverDirectLimit, atLeast(TARGETS.backfillOverLimit)),
      ),
    );
  }
  rows.push(
    row("eth_call per citizen stake, 1 worker", `<= ${TARGETS.ethCallsPerCitizenStake}`, (f) =>
      verdict(f.ethCallsPerCitizenStake, atMost(TARGETS.ethCallsPerCitizenStake)),
    ),
    row("duplicate eth_calls, 1 worker", `${TARGETS.duplicateEthCalls}`, (f) =>
      verdict(f.duplicateEthCalls, atMost(TARGETS.duplicateEthCalls)),
    ),
    row("  most in any run", `${TARGETS.duplicateEthCalls}`, (f) =>
      most(f.duplicateEthCallsMostInARun),
    ),
    row("abandoned HTTP requests, most in any run", "-", (f) =>
      most(f.abandonedRequestsMostInARun),
    ),
    row("eth_call per event, 1 worker", "-", (f) => f.ethCallsPerEvent ?? "-"),
    row(
      "contract calls per citizen stake, 1 worker",
      "-",
      (f) => f.viewCallsPerCitizenStake ?? "-",
    ),
    row("duplicate contract calls, 1 worker", "-", (f) => f.duplicateViewCalls ?? "-"),
    row("worker CPU µs per event, 1 worker", `<= ${TARGETS.workerCpuMicrosPerEvent}`, (f) =>
      verdict(f.oneWorkerCpuMicrosPerEvent, atMost(TARGETS.workerCpuMicrosPerEvent)),
    ),
    row("peak RSS MB of the worker, 1 worker", `< ${TARGETS.workerPeakRssMb}, flat`, (f) =>
      verdict(f.oneWorkerPeakRssMb, (mb) => mb < TARGETS.workerPeakRssMb),
    ),
    row("peak RSS MB of a worker, any run", `< ${TARGETS.workerPeakRssMb}, flat`, (f) =>
      verdict(f.workerPeakRssMb, (mb) => mb < TARGETS.workerPeakRssMb),
    ),
  );
  return table(rows);
}
