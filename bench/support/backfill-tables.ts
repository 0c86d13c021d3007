/**
 * The backfill bench's figures beside issue 12's targets: one table of runs per scenario size,
 * one summary with the sizes side by side, the chunk write times against stored history, and
 * the flat ratios and headline figures of the JSON report.
 */

import type { ChunkWritePoint } from "../../test/support/synthetic-history.ts";
import type { CountedRun, RealRun, SizeRun } from "../backfill.ts";
import {
  byCount,
  chunkWriteTable,
  print,
  ratio,
  round,
  type Target,
  table,
  targetText,
  verdict,
} from "./report.ts";

export const TARGETS = {
  /** Backfill events/s over raw eth_getLogs + COPY of the same logs, at least. */
  backfillOverLimit: 0.2,
  /** Backfill events/s over the fair limit: the same logs, the reads they need, COPY (issue 31). */
  backfillOverFairLimit: 0.5,
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

function runLabel(real: RealRun): string {
  const path = { direct: ", no proxy", counting: "", latency: `, ${real.proxyDelayMs} ms proxy` };
  return `${real.workers} worker${real.workers > 1 ? "s" : ""} x ${real.concurrencyPerWorker}${path[real.path]}`;
}

/** The runs whose calls a proxy counted: every worker count and the latency run. */
const countedRuns = (run: SizeRun): CountedRun[] =>
  run.latency ? [...run.real, run.latency] : run.real;

/** The largest figure among the runs, and which run it came from. */
function mostIn(runs: CountedRun[], figure: (real: CountedRun) => number) {
  const [top] = [...runs].sort((a, b) => figure(b) - figure(a));
  return top ? { value: figure(top), run: runLabel(top) } : null;
}

/** One size's headline figures; the one-worker run where one run has to speak for the size. */
function headline(run: SizeRun) {
  const { direct, counting, latency, fair, fairCounting } = run.limit;
  const one = run.real.find((real) => real.workers === 1) ?? run.real[0];
  const [fastest] = [...run.real].sort((a, b) => b.eventsPerSecond - a.eventsPerSecond);
  return {
    events: run.spec.events,
    stakerEvents: one?.events ?? 0,
    citizenStakes: one?.citizenStakes ?? 0,
    controlEventsPerSecond: run.control.eventsPerSecond,
    controlOverDirectLimit: ratio(run.control.eventsPerSecond, direct.eventsPerSecond),
    controlOverFairLimit: ratio(run.control.eventsPerSecond, fair.eventsPerSecond),
    fairLimitEthCalls: fair.ethCalls,
    oneWorkerEventsPerSecond: one?.eventsPerSecond ?? null,
    oneWorkerOverLimit: ratio(one?.eventsPerSecond, counting.eventsPerSecond),
    oneWorkerOverFairLimit: ratio(one?.eventsPerSecond, fairCounting?.eventsPerSecond),
    fastest: fastest ? runLabel(fastest) : null,
    fastestEventsPerSecond: fastest?.eventsPerSecond ?? null,
    fastestOverLimit: ratio(fastest?.eventsPerSecond, counting.eventsPerSecond),
    fastestOverFairLimit: ratio(fastest?.eventsPerSecond, fairCounting?.eventsPerSecond),
    latencyEventsPerSecond: run.latency?.eventsPerSecond ?? null,
    latencyOverLatencyLimit: ratio(run.latency?.eventsPerSecond, latency?.eventsPerSecond),
    latencyOverDirectLimit: ratio(run.latency?.eventsPerSecond, direct.eventsPerSecond),
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

export const summarize = (runs: SizeRun[]) => runs.map(headline);

/** Flat ratios for the JSON report, named `<figure>@<events>`. */
export function ratiosOf(runs: SizeRun[]): Record<string, number | null> {
  const ratios: Record<string, number | null> = {};
  for (const run of runs) {
    const { direct, counting, latency, fair, fairCounting } = run.limit;
    const put = (name: string, rate: number, limit?: { eventsPerSecond: number }) => {
      ratios[`${name}@${run.spec.events}`] = ratio(rate, limit?.eventsPerSecond);
    };
    for (const real of run.real) {
      put(`real_w${real.workers}_over_limit`, real.eventsPerSecond, counting);
      put(`real_w${real.workers}_over_direct_limit`, real.eventsPerSecond, direct);
      put(`real_w${real.workers}_over_fair_limit`, real.eventsPerSecond, fairCounting);
    }
    put("control_w1_over_direct_limit", run.control.eventsPerSecond, direct);
    put("control_w1_over_fair_limit", run.control.eventsPerSecond, fair);
    if (run.latency && latency) {
      put("latency_over_latency_limit", run.latency.eventsPerSecond, latency);
      put("latency_over_direct_limit", run.latency.eventsPerSecond, direct);
    }
    put("reproject_over_limit", run.control.reproject.eventsPerSecond, direct);
  }
  return ratios;
}

/** Every run on one size: the limits, the reproject, each worker count, control, latency. */
function runTable(run: SizeRun): string {
  const { direct, counting, latency, fair, fairCounting } = run.limit;
  const rate = (of: number, limit: { eventsPerSecond: number }) =>
    round(of / limit.eventsPerSecond, 4);
  const uncounted = ["-", "-", "-", "-", "-"];
  const limitRow = (name: string, limit: typeof direct) => [
    name,
    limit.seconds,
    limit.eventsPerSecond,
    1,
    round(limit.eventsPerSecond / direct.eventsPerSecond, 3),
    limit.fair ? 1 : "-",
    ...(limit.fair ? [round(limit.ethCalls / limit.stakeRows, 4), "-", "-", "-", "-"] : uncounted),
    limit.chunks + limit.ethCalls,
  ];
  const realRow = (real: RealRun, limit: typeof direct, fairLimit?: typeof direct) => [
    `backfill, ${runLabel(real)}`,
    real.seconds,
    real.eventsPerSecond,
    rate(real.eventsPerSecond, limit),
    rate(real.eventsPerSecond, direct),
    fairLimit ? rate(real.eventsPerSecond, fairLimit) : "-",
    ...(real.rpc
      ? [
          real.rpc.ethCallsPerCitizenStake,
          real.rpc.duplicateEthCalls,
          real.rpc.ethCallsPerEvent,
          real.rpc.viewCallsPerCitizenStake,
          real.rpc.duplicateViewCalls,
          `${real.rpc.httpRequests} (${real.rpc.abandonedRequests})`,
        ]
      : [...uncounted, "-"]),
    real.workerCpuMicrosPerEvent,
    real.workerPeakRssBytes.map((bytes) => (bytes / MB).toFixed(0)).join(" / "),
  ];
  const { reproject } = run.control;
  const header = ["run", "seconds", "events/s", "/ limit same path", "/ direct limit", "/ fair"];
  const rows = [
    [...header, "eth_call/stake", "dup eth_call", "eth_call/event", "views/stake", "dup views"],
    limitRow("limit: eth_getLogs + COPY, no proxy", direct),
    limitRow("limit, through the counting proxy", counting),
    ...(latency
      ? [limitRow(`limit, through the ${run.latency?.proxyDelayMs} ms proxy`, latency)]
      : []),
    limitRow("fair limit: eth_getLogs + reads + COPY, no proxy", fair),
    ...(fairCounting ? [limitRow("fair limit, through the counting proxy", fairCounting)] : []),
    [
      "reproject (stored events and reads, no RPC)",
      reproject.seconds,
      reproject.eventsPerSecond,
      "-",
      round(reproject.eventsPerSecond / direct.eventsPerSecond, 3),
      "-",
      ...uncounted,
      0,
    ],
    ...run.real.map((real) => realRow(real, counting, fairCounting)),
    realRow(run.control, direct, fair),
    ...(run.latency && latency ? [realRow(run.latency, latency)] : []),
  ];
  rows[0]!.push("HTTP req (abandoned)", "CPU µs/event", "peak RSS MB per worker");
  const perRun = (what: string, line: (real: CountedRun) => string) => [
    what,
    ...countedRuns(run).map((real) => `  ${runLabel(real)}: ${line(real)}`),
  ];
  const mb = (bytes: number) => (bytes / MB).toFixed(1);
  const { control } = run;
  return [
    `backfill of ${control.events} staker events (${control.citizenStakes} citizen stakes) over blocks ${run.fromBlock}..${run.head}, ${control.chunks} chunks; the node peaked at ${(run.nodePeakRssBytes / MB / 1024).toFixed(1)} GB RSS`,
    "(/ fair: over the fair limit, the same logs and reads and COPY, through the same path;",
    " views: the contract calls inside the eth_calls, each call of a multicall counted; abandoned:",
    " HTTP requests whose client timed out before the node answered, and asked again)",
    "",
    table(rows),
    "",
    ...perRun(
      "JSON-RPC calls by method (each batch element counted), bytes, the slowest HTTP request:",
      ({ rpc }) =>
        `${byCount(rpc.callsByMethod)}; ${mb(rpc.requestBytes)} MB asked, ${mb(rpc.responseBytes)} MB answered; slowest ${rpc.slowestRequestMs} ms`,
    ),
    ...perRun(
      "eth_calls: multicalls, and single reads by function:",
      ({ rpc }) => `multicall ${rpc.multicallEthCalls}, ${byCount(rpc.singleEthCallsByFunction)}`,
    ),
    ...perRun(
      "contract calls inside the eth_calls, by function (repeated ones in brackets):",
      ({ rpc }) => byCount(rpc.viewCallsByFunction, rpc.duplicateViewCallsByFunction),
    ),
    "worker CPU seconds by thread (jit: compiling hot code, in every worker process; gc: the collector's helpers):",
    ...[...run.real, run.control, ...(run.latency ? [run.latency] : [])].map(
      (real) => `  ${runLabel(real)}: ${byCount(real.workerCpuByThread)}`,
    ),
    "cores busy while each ran (CPU seconds / wall seconds) and, for the limits, seconds fetching (of which reads) and COPYing:",
    ...[direct, fair].map(
      (l) =>
        `  ${l.fair ? "fair limit" : "limit"}: ${byCount(l.cores)}; fetch ${l.fetchSeconds} (reads ${l.readSeconds}), COPY ${l.copySeconds}`,
    ),
    ...[...run.real, run.control].map((real) => `  ${runLabel(real)}: ${byCount(real.cores)}`),
  ].join("\n");
}

function most(figure: { value: number; run: string } | null): string {
  if (!figure) return "-";
  return figure.value === 0 ? "0" : `${figure.value} (${figure.run})`;
}

/** The sizes side by side, each figure beside its target (peak RSS side by side shows flatness). */
function summaryTable(runs: SizeRun[]): string {
  const figures = summarize(runs);
  const latencyMs = runs.find((run) => run.latency)?.latency?.proxyDelayMs;
  type Figures = (typeof figures)[number];
  const row = (
    name: string,
    target: Target | string,
    cell: (f: Figures) => string | number | null,
  ) => [name, typeof target === "string" ? target : targetText(target), ...figures.map(cell)];
  const judged = (name: string, target: Target, value: (f: Figures) => number | null) =>
    row(name, target, (f) => verdict(value(f), target));
  const enough = { atLeast: TARGETS.backfillOverLimit };
  const fair = { atLeast: TARGETS.backfillOverFairLimit };
  const fairName = "  / fair limit (same reads + COPY)";
  const calls = { atMost: TARGETS.ethCallsPerCitizenStake };
  const duplicates = { atMost: TARGETS.duplicateEthCalls };
  const cpu = { atMost: TARGETS.workerCpuMicrosPerEvent };
  const rss = { below: TARGETS.workerPeakRssMb };
  return table([
    ["figure", "target", ...figures.map((f) => `${f.events} events`)],
    row("citizen stakes (S1/S2 Stake events)", "-", (f) => f.citizenStakes),
    row("backfill events/s, 1 worker, no proxy", "-", (f) => f.controlEventsPerSecond),
    judged("  / limit", enough, (f) => f.controlOverDirectLimit),
    judged(fairName, fair, (f) => f.controlOverFairLimit),
    row("backfill events/s, 1 worker, counted", "-", (f) => f.oneWorkerEventsPerSecond),
    judged("  / limit through the same proxy", enough, (f) => f.oneWorkerOverLimit),
    judged(`${fairName} through the same proxy`, fair, (f) => f.oneWorkerOverFairLimit),
    row("fastest worker count, counted", "-", (f) => `${f.fastestEventsPerSecond}/s: ${f.fastest}`),
    judged("  / limit through the same proxy", enough, (f) => f.fastestOverLimit),
    judged(`${fairName} through the same proxy`, fair, (f) => f.fastestOverFairLimit),
    ...(latencyMs === undefined
      ? []
      : [
          row(`backfill events/s, ${latencyMs} ms proxy`, "-", (f) => f.latencyEventsPerSecond),
          judged("  / limit through the same proxy", enough, (f) => f.latencyOverLatencyLimit),
          judged("  / limit without proxy", enough, (f) => f.latencyOverDirectLimit),
        ]),
    judged("eth_call per citizen stake, 1 worker", calls, (f) => f.ethCallsPerCitizenStake),
    row("  the fair limit's eth_calls", "-", (f) => f.fairLimitEthCalls),
    judged("duplicate eth_calls, 1 worker", duplicates, (f) => f.duplicateEthCalls),
    row("  most in any run", `${TARGETS.duplicateEthCalls}`, (f) =>
      most(f.duplicateEthCallsMostInARun),
    ),
    row("abandoned HTTP requests, most in any run", "-", (f) =>
      most(f.abandonedRequestsMostInARun),
    ),
    row("eth_call per event, 1 worker", "-", (f) => f.ethCallsPerEvent),
    row("contract calls per citizen stake, 1 worker", "-", (f) => f.viewCallsPerCitizenStake),
    row("duplicate contract calls, 1 worker", "-", (f) => f.duplicateViewCalls),
    judged("worker CPU µs per event, 1 worker, counted", cpu, (f) => f.oneWorkerCpuMicrosPerEvent),
    judged("  no proxy", cpu, (f) => f.controlCpuMicrosPerEvent),
    judged("peak RSS MB, 1 worker, counted (flat)", rss, (f) => f.oneWorkerPeakRssMb),
    judged("peak RSS MB of a worker, any run (flat)", rss, (f) => f.workerPeakRssMb),
  ]);
}

/** Every table of the backfill bench, on stdout. */
export function printTables(
  runs: SizeRun[],
  history: ChunkWritePoint[],
  chunks: { chunkEvents: number; citizens: number },
) {
  for (const run of runs) console.log(`\n${runTable(run)}`);
  console.log(`\n${summaryTable(runs)}`);
  if (history.length > 0) print(chunkWriteTable(history, chunks.chunkEvents, chunks.citizens));
}
