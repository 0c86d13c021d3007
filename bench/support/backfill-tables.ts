/**
 * The backfill bench's figures beside issue 12's targets: one table of runs per scenario size,
 * one summary with the sizes side by side, and the flat ratios of the JSON report. Targets are
 * printed with a verdict, never asserted.
 */
import type { CountedRun, RealRun, SizeRun } from "./backfill-runs.ts";
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

const over = (eventsPerSecond: number | undefined, limit: number | undefined) =>
  eventsPerSecond !== undefined && limit ? round(eventsPerSecond / limit, 4) : null;

function verdict(value: number | null, met: (value: number) => boolean): string {
  if (value === null || !Number.isFinite(value)) return "-";
  return `${value} (${met(value) ? "met" : "NOT met"})`;
}

const atLeast = (target: number) => (value: number) => value >= target;
const atMost = (target: number) => (value: number) => value <= target;

function runLabel(real: RealRun): string {
  const path = { direct: ", no proxy", counting: "", latency: `, ${real.proxyDelayMs} ms proxy` };
  return `${real.workers} worker${real.workers > 1 ? "s" : ""} x ${real.concurrencyPerWorker}${path[real.path]}`;
}

/** The largest figure among the runs, and which run it came from. */
function mostIn(runs: CountedRun[], figure: (real: CountedRun) => number) {
  const [top] = [...runs].sort((a, b) => figure(b) - figure(a));
  return top ? { value: figure(top), run: runLabel(top) } : null;
}

/** The runs whose calls a proxy counted: every worker count and the latency run. */
function countedRuns(run: SizeRun): CountedRun[] {
  return run.latency ? [...run.real, run.latency] : run.real;
}

/** One size's headline figures; the one-worker run where one run has to speak for the size. */
function headline(run: SizeRun) {
  const { direct, counting, latency } = run.limit;
  const one = run.real.find((real) => real.workers === 1) ?? run.real[0];
  const [fastest] = [...run.real].sort((a, b) => b.eventsPerSecond - a.eventsPerSecond);
  return {
    events: run.spec.events,
    stakerEvents: one?.events ?? 0,
    citizenStakes: one?.citizenStakes ?? 0,
    controlEventsPerSecond: run.control.eventsPerSecond,
    controlOverDirectLimit: over(run.control.eventsPerSecond, direct.eventsPerSecond),
    oneWorkerEventsPerSecond: one?.eventsPerSecond ?? null,
    oneWorkerOverLimit: over(one?.eventsPerSecond, counting.eventsPerSecond),
    fastest: fastest ? runLabel(fastest) : null,
    fastestEventsPerSecond: fastest?.eventsPerSecond ?? null,
    fastestOverLimit: over(fastest?.eventsPerSecond, counting.eventsPerSecond),
    latencyEventsPerSecond: run.latency?.eventsPerSecond ?? null,
    latencyOverLatencyLimit: over(run.latency?.eventsPerSecond, latency?.eventsPerSecond),
    latencyOverDirectLimit: over(run.latency?.eventsPerSecond, direct.eventsPerSecond),
    ethCallsPerCitizenStake: one?.rpc.ethCallsPerCitizenStake ?? null,
    ethCallsPerEvent: one?.rpc.ethCallsPerEvent ?? null,
    duplicateEthCalls: one?.rpc.duplicateEthCalls ?? null,
    duplicateEthCallsMostInARun: mostIn(countedRuns(run), (real) => real.rpc.duplicateEthCalls),
    abandonedRequestsMostInARun: mostIn(countedRuns(run), (real) => real.rpc.abandonedRequests),
    viewCallsPerCitizenStake: one?.rpc.viewCallsPerCitizenStake ?? null,
    duplicateViewCalls: one?.rpc.duplicateViewCalls ?? null,
    oneWorkerCpuMicrosPerEvent: one?.workerCpuMicrosPerEvent ?? null,
    controlCpuMicrosPerEvent: run.control.workerCpuMicrosPerEvent,
    oneWorkerPeakRssMb: one ? round(peakMb(one), 1) : null,
    workerPeakRssMb: round(Math.max(...[...countedRuns(run), run.control].map(peakMb)), 1),
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
      ratios[`real_w${real.workers}_over_limit${at}`] = over(
        real.eventsPerSecond,
        counting.eventsPerSecond,
      );
      ratios[`real_w${real.workers}_over_direct_limit${at}`] = over(
        real.eventsPerSecond,
        direct.eventsPerSecond,
      );
    }
    ratios[`control_w1_over_direct_limit${at}`] = over(
      run.control.eventsPerSecond,
      direct.eventsPerSecond,
    );
    if (run.latency && latency) {
      ratios[`latency_over_latency_limit${at}`] = over(
        run.latency.eventsPerSecond,
        latency.eventsPerSecond,
      );
      ratios[`latency_over_direct_limit${at}`] = over(
        run.latency.eventsPerSecond,
        direct.eventsPerSecond,
      );
    }
    ratios[`reproject_over_limit${at}`] = over(
      run.control.reproject.eventsPerSecond,
      direct.eventsPerSecond,
    );
  }
  return ratios;
}

/** Every run on one size: the limits, the reproject, each worker count, control, latency. */
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
  const uncounted = ["-", "-", "-", "-", "-"];
  const limitRow = (name: string, limit: typeof direct) => [
    name,
    limit.seconds,
    limit.eventsPerSecond,
    1,
    round(limit.eventsPerSecond / direct.eventsPerSecond, 3),
    ...uncounted,
    limit.chunks,
    "-",
    "-",
  ];
  const realRow = (real: RealRun, limit: typeof direct) => [
    `backfill, ${runLabel(real)}`,
    real.seconds,
    real.eventsPerSecond,
    round(real.eventsPerSecond / limit.eventsPerSecond, 4),
    round(real.eventsPerSecond / direct.eventsPerSecond, 4),
    ...(real.rpc
      ? [
          real.rpc.ethCallsPerCitizenStake ?? "-",
          real.rpc.duplicateEthCalls,
          real.rpc.ethCallsPerEvent ?? "-",
          real.rpc.viewCallsPerCitizenStake ?? "-",
          real.rpc.duplicateViewCalls,
          `${real.rpc.httpRequests} (${real.rpc.abandonedRequests})`,
        ]
      : [...uncounted, "-"]),
    real.workerCpuMicrosPerEvent ?? "-",
    real.workerPeakRssBytes.map((bytes) => (bytes / MB).toFixed(0)).join(" / "),
  ];
  rows.push(limitRow("limit: eth_getLogs + COPY, no proxy", direct));
  rows.push(limitRow("limit, through the counting proxy", counting));
  if (latency) rows.push(limitRow(`limit, through the ${latencyMs} ms proxy`, latency));
  const { reproject } = run.control;
  rows.push([
    "reproject (stored events and reads, no RPC)",
    reproject.seconds,
    reproject.eventsPerSecond,
    "-",
    round(reproject.eventsPerSecond / direct.eventsPerSecond, 3),
    ...uncounted,
    0,
    "-",
    "-",
  ]);
  for (const real of run.real) rows.push(realRow(real, counting));
  rows.push(realRow(run.control, direct));
  if (run.latency && latency) rows.push(realRow(run.latency, latency));
  const { control } = run;
  return [
    `backfill of ${control.events} staker events (${control.citizenStakes} citizen stakes) over blocks ${run.fromBlock}..${run.head}, ${control.chunks} chunks; the node peaked at ${(run.nodePeakRssBytes / MB / 1024).toFixed(1)} GB RSS`,
    "(views: the contract calls inside the eth_calls, each call of a multicall counted; abandoned:",
    " HTTP requests whose client timed out before the node answered, and asked again)",
    "",
    table(rows),
    "",
    "JSON-RPC calls by method (each batch element counted), bytes, the slowest HTTP request:",
    ...countedRuns(run).map(
      (real) =>
        `  ${runLabel(real)}: ${byCount(real.rpc.callsByMethod)}; ${megabytes(real.rpc.requestBytes)} MB asked, ${megabytes(real.rpc.responseBytes)} MB answered; slowest ${real.rpc.slowestRequestMs} ms`,
    ),
    "eth_calls: multicalls, and single reads by function:",
    ...countedRuns(run).map(
      (real) =>
        `  ${runLabel(real)}: multicall ${real.rpc.multicallEthCalls}, ${byCount(real.rpc.singleEthCallsByFunction)}`,
    ),
    "contract calls inside the eth_calls, by function (repeated ones in brackets):",
    ...countedRuns(run).map(
      (real) =>
        `  ${runLabel(real)}: ${byCount(real.rpc.viewCallsByFunction, real.rpc.duplicateViewCallsByFunction)}`,
    ),
    "worker CPU seconds by thread (jit: compiling hot code, in every worker process; gc: the collector's helpers):",
    ...[...run.real, run.control, ...(run.latency ? [run.latency] : [])].map(
      (real) =>
        `  ${runLabel(real)}: ${Object.entries(real.workerCpuByThread)
          .map(([role, seconds]) => `${role} ${seconds}`)
          .join(", ")}`,
    ),
  ].join("\n");
}

const megabytes = (bytes: number) => (bytes / MB).toFixed(1);

function most(figure: { value: number; run: string } | null): string {
  if (!figure) return "-";
  return figure.value === 0 ? "0" : `${figure.value} (${figure.run})`;
}

function byCount(byName: Record<string, number>, repeated?: Record<string, number>): string {
  return Object.entries(byName)
    .sort(([, a], [, b]) => b - a)
    .map(([name, count]) => `${name} ${count}${repeated?.[name] ? ` (${repeated[name]})` : ""}`)
    .join(", ");
}

/** The sizes side by side, each figure beside its target (peak RSS side by side shows flatness). */
export function summaryTable(runs: SizeRun[]): string {
  const figures = summarize(runs);
  const latencyMs = runs.find((run) => run.latency)?.latency?.proxyDelayMs;
  type Figures = (typeof figures)[number];
  const row = (name: string, target: string, cell: (f: Figures) => string | number | null) => [
    name,
    target,
    ...figures.map((f) => cell(f) ?? "-"),
  ];
  const ratio = `>= ${TARGETS.backfillOverLimit}`;
  const enough = atLeast(TARGETS.backfillOverLimit);
  const rows: (string | number)[][] = [
    ["figure", "target", ...figures.map((f) => `${f.events} events`)],
    row("citizen stakes (S1/S2 Stake events)", "-", (f) => f.citizenStakes),
    row("backfill events/s, 1 worker, no proxy", "-", (f) => f.controlEventsPerSecond),
    row("  / limit", ratio, (f) => verdict(f.controlOverDirectLimit, enough)),
    row("backfill events/s, 1 worker, counted", "-", (f) => f.oneWorkerEventsPerSecond),
    row("  / limit through the same proxy", ratio, (f) => verdict(f.oneWorkerOverLimit, enough)),
    row("fastest worker count, counted", "-", (f) => `${f.fastestEventsPerSecond}/s: ${f.fastest}`),
    row("  / limit through the same proxy", ratio, (f) => verdict(f.fastestOverLimit, enough)),
  ];
  if (latencyMs !== undefined) {
    rows.push(
      row(`backfill events/s, ${latencyMs} ms proxy`, "-", (f) => f.latencyEventsPerSecond),
      row("  / limit through the same proxy", ratio, (f) =>
        verdict(f.latencyOverLatencyLimit, enough),
      ),
      row("  / limit without proxy", ratio, (f) => verdict(f.latencyOverDirectLimit, enough)),
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
    row("eth_call per event, 1 worker", "-", (f) => f.ethCallsPerEvent),
    row("contract calls per citizen stake, 1 worker", "-", (f) => f.viewCallsPerCitizenStake),
    row("duplicate contract calls, 1 worker", "-", (f) => f.duplicateViewCalls),
    row(
      "worker CPU µs per event, 1 worker, counted",
      `<= ${TARGETS.workerCpuMicrosPerEvent}`,
      (f) => verdict(f.oneWorkerCpuMicrosPerEvent, atMost(TARGETS.workerCpuMicrosPerEvent)),
    ),
    row("  no proxy", `<= ${TARGETS.workerCpuMicrosPerEvent}`, (f) =>
      verdict(f.controlCpuMicrosPerEvent, atMost(TARGETS.workerCpuMicrosPerEvent)),
    ),
    row("peak RSS MB, 1 worker, counted", `< ${TARGETS.workerPeakRssMb}, flat`, (f) =>
      verdict(f.oneWorkerPeakRssMb, (mb) => mb < TARGETS.workerPeakRssMb),
    ),
    row("peak RSS MB of a worker, any run", `< ${TARGETS.workerPeakRssMb}, flat`, (f) =>
      verdict(f.workerPeakRssMb, (mb) => mb < TARGETS.workerPeakRssMb),
    ),
  );
  return table(rows);
}
