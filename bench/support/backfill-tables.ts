/** The backfill bench's tables (per size, then a summary beside issue 12's targets) and ratios. */
import type { CountedRun, RealRun, SizeRun } from "../backfill.ts";
import type { LimitRun } from "./limit.ts";
import {
  byCount,
  type Cell,
  columns,
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
const peakMb = (run: RealRun) => round(Math.max(...run.workerPeakRssBytes) / MB, 1);
const over = (run: { eventsPerSecond: number } | undefined, limit: LimitRun | undefined) =>
  ratio(run?.eventsPerSecond, limit?.eventsPerSecond);

function runLabel(real: RealRun): string {
  const latency = real.proxyDelayMs > 0 ? `, ${real.proxyDelayMs} ms proxy` : "";
  const path = real.path === "direct" ? ", no proxy" : latency;
  return `${real.workers} worker${real.workers > 1 ? "s" : ""} x ${real.concurrencyPerWorker}${path}`;
}

/** The runs whose calls a proxy counted: every worker count and the latency run. */
const countedRuns = (run: SizeRun): CountedRun[] =>
  run.latency ? [...run.real, run.latency] : run.real;

/** Flat ratios for the JSON report, named `<figure>@<events>`. */
export function ratiosOf(runs: SizeRun[]): Record<string, number | null> {
  const ratios: Record<string, number | null> = {};
  for (const run of runs) {
    const { direct, counting, latency, fair, fairCounting } = run.limit;
    const put = (name: string, real: { eventsPerSecond: number }, limit?: LimitRun) => {
      ratios[`${name}@${run.scenario.events}`] = over(real, limit);
    };
    for (const real of run.real) {
      put(`real_w${real.workers}_over_limit`, real, counting);
      put(`real_w${real.workers}_over_direct_limit`, real, direct);
      put(`real_w${real.workers}_over_fair_limit`, real, fairCounting);
    }
    put("control_w1_over_direct_limit", run.control, direct);
    put("control_w1_over_fair_limit", run.control, fair);
    if (run.latency && latency) {
      put("latency_over_latency_limit", run.latency, latency);
      put("latency_over_direct_limit", run.latency, direct);
    }
    put("reproject_over_limit", run.control.reproject, direct);
  }
  return ratios;
}

/** A row of a size's table: a limit, the reproject or a backfill, and what to divide it by. */
type Line = { run: string; seconds: number; eventsPerSecond: number; same?: LimitRun };
type RunLine = Line & { limit?: LimitRun; real?: RealRun; fairLimit?: LimitRun };

/** Every run on one size: the limits, the reproject, each worker count, control, latency. */
function runTable(run: SizeRun): string {
  const { direct, counting, latency, fair, fairCounting } = run.limit;
  const limitLine = (run: string, limit: LimitRun): RunLine => ({
    ...limit,
    run,
    same: limit,
    limit,
  });
  const realLine = (real: RealRun, same: LimitRun, fairLimit?: LimitRun): RunLine => {
    return { ...real, run: `backfill, ${runLabel(real)}`, same, real, fairLimit };
  };
  const lines = [
    limitLine("limit: eth_getLogs + COPY, no proxy", direct),
    limitLine("limit, through the counting proxy", counting),
    ...(latency
      ? [limitLine(`limit, through the ${run.latency?.proxyDelayMs} ms proxy`, latency)]
      : []),
    limitLine("fair limit: eth_getLogs + reads + COPY, no proxy", fair),
    ...(fairCounting ? [limitLine("fair limit, through the counting proxy", fairCounting)] : []),
    { run: "reproject (stored events and reads, no RPC)", ...run.control.reproject },
    ...run.real.map((real) => realLine(real, counting, fairCounting)),
    realLine(run.control, direct, fair),
    ...(run.latency && latency ? [realLine(run.latency, latency)] : []),
  ];
  const calls = (line: RunLine) => line.real?.rpc;
  const fairCalls = ({ limit }: RunLine) =>
    limit?.fair ? round(limit.ethCalls / limit.stakeRows, 4) : null;
  const mb = (bytes: number) => (bytes / MB).toFixed(1);
  const { control } = run;
  return [
    `backfill of ${control.events} staker events (${control.citizenStakes} citizen stakes) over blocks ${run.scenario.deployment.deployBlock}..${run.scenario.head}, ${control.chunks} chunks; the node peaked at ${(run.nodePeakRssBytes / MB / 1024).toFixed(1)} GB RSS`,
    "(/ fair: over the fair limit, the same logs and reads and COPY, through the same path;",
    " views: the contract calls inside the eth_calls, each call of a multicall counted; abandoned:",
    " HTTP requests whose client timed out before the node answered, and asked again)",
    "",
    columns<RunLine>(lines, {
      run: (line) => line.run,
      seconds: (line) => line.seconds,
      "events/s": (line) => line.eventsPerSecond,
      "/ limit same path": (line) => over(line, line.same),
      "/ direct limit": (line) => over(line, direct),
      "/ fair": (line) => (line.limit ? (line.limit.fair ? 1 : null) : over(line, line.fairLimit)),
      "eth_call/stake": (line) => calls(line)?.ethCallsPerCitizenStake ?? fairCalls(line),
      "dup eth_call": (line) => calls(line)?.duplicateEthCalls,
      "eth_call/event": (line) => calls(line)?.ethCallsPerEvent,
      "views/stake": (line) => calls(line)?.viewCallsPerCitizenStake,
      "dup views": (line) => calls(line)?.duplicateViewCalls,
      "HTTP req (abandoned)": ({ limit, real }): Cell =>
        limit
          ? limit.chunks + limit.ethCalls
          : real?.rpc && `${real.rpc.httpRequests} (${real.rpc.abandonedRequests})`,
      "CPU µs/event": (line) => line.real?.workerCpuMicrosPerEvent,
      "peak RSS MB per worker": (line) =>
        line.real?.workerPeakRssBytes.map((bytes) => (bytes / MB).toFixed(0)).join(" / "),
    }),
    "",
    "each run's JSON-RPC calls by method (each batch element counted), bytes and slowest HTTP request;",
    "  its eth_calls: multicalls, and single reads by function; the contract calls inside them, by",
    "  function (repeated ones in brackets):",
    ...countedRuns(run).flatMap((real) => [
      `  ${runLabel(real)}: ${byCount(real.rpc.callsByMethod)}; ${mb(real.rpc.requestBytes)} MB asked, ${mb(real.rpc.responseBytes)} MB answered; slowest ${real.rpc.slowestRequestMs} ms`,
      `    multicall ${real.rpc.multicallEthCalls}, ${byCount(real.rpc.singleEthCallsByFunction)}`,
      `    ${byCount(real.rpc.viewCallsByFunction, real.rpc.duplicateViewCallsByFunction)}`,
    ]),
    "cores busy while each ran (CPU seconds / wall seconds; children: the workers) and, for the limits, seconds fetching (of which reads) and COPYing:",
    ...[direct, fair].map(
      (l) =>
        `  ${l.fair ? "fair limit" : "limit"}: ${byCount(l.cores)}; fetch ${l.fetchSeconds} (reads ${l.readSeconds}), COPY ${l.copySeconds}`,
    ),
    ...[...run.real, run.control].map((real) => `  ${runLabel(real)}: ${byCount(real.cores)}`),
  ].join("\n");
}

/** The sizes side by side, each figure beside its target (peak RSS side by side shows flatness). */
function summaryTable(runs: SizeRun[]): string {
  const sizes = runs.map((run) => ({
    ...run,
    /** The one-worker run, where one run has to speak for the size. */
    one: run.real.find((real) => real.workers === 1) ?? run.real[0]!,
    fastest: run.real.toSorted((a, b) => b.eventsPerSecond - a.eventsPerSecond)[0]!,
  }));
  type Size = (typeof sizes)[number];
  const row = (name: string, target: Target | string, cell: (size: Size) => Cell) => [
    name,
    typeof target === "string" ? target : targetText(target),
    ...sizes.map(cell),
  ];
  const judged = (name: string, target: Target, value: (size: Size) => number | null) =>
    row(name, target, (size) => verdict(value(size), target));
  /** The largest figure among the counted runs, and which run it came from. */
  const most = (figure: (real: CountedRun) => number) => (size: Size) => {
    const top = countedRuns(size).toSorted((a, b) => figure(b) - figure(a))[0];
    return !top || figure(top) === 0 ? "0" : `${figure(top)} (${runLabel(top)})`;
  };
  const latencyMs = runs.find((run) => run.latency)?.latency?.proxyDelayMs;
  const enough = { atLeast: TARGETS.backfillOverLimit };
  const fair = { atLeast: TARGETS.backfillOverFairLimit };
  const sameProxy = "  / limit through the same proxy";
  const fairName = "  / fair limit (same reads + COPY)";
  const calls = { atMost: TARGETS.ethCallsPerCitizenStake };
  const duplicates = { atMost: TARGETS.duplicateEthCalls };
  const cpu = { atMost: TARGETS.workerCpuMicrosPerEvent };
  const rss = { below: TARGETS.workerPeakRssMb };
  return table([
    ["figure", "target", ...runs.map((run) => `${run.scenario.events} events`)],
    row("citizen stakes (S1/S2 Stake events)", "-", (s) => s.one.citizenStakes),
    row("backfill events/s, 1 worker, no proxy", "-", (s) => s.control.eventsPerSecond),
    judged("  / limit", enough, (s) => over(s.control, s.limit.direct)),
    judged(fairName, fair, (s) => over(s.control, s.limit.fair)),
    row("backfill events/s, 1 worker, counted", "-", (s) => s.one.eventsPerSecond),
    judged(sameProxy, enough, (s) => over(s.one, s.limit.counting)),
    judged(`${fairName} through the same proxy`, fair, (s) => over(s.one, s.limit.fairCounting)),
    row(
      "fastest worker count, counted",
      "-",
      (s) => `${s.fastest.eventsPerSecond}/s: ${runLabel(s.fastest)}`,
    ),
    judged(sameProxy, enough, (s) => over(s.fastest, s.limit.counting)),
    judged(`${fairName} through the same proxy`, fair, (s) =>
      over(s.fastest, s.limit.fairCounting),
    ),
    ...(latencyMs === undefined
      ? []
      : [
          row(`backfill events/s, ${latencyMs} ms proxy`, "-", (s) => s.latency?.eventsPerSecond),
          judged(sameProxy, enough, (s) => over(s.latency, s.limit.latency)),
          judged("  / limit without proxy", enough, (s) => over(s.latency, s.limit.direct)),
        ]),
    judged("eth_call per citizen stake, 1 worker", calls, (s) => s.one.rpc.ethCallsPerCitizenStake),
    row("  the fair limit's eth_calls", "-", (s) => s.limit.fair.ethCalls),
    judged("duplicate eth_calls, 1 worker", duplicates, (s) => s.one.rpc.duplicateEthCalls),
    row(
      "  most in any run",
      duplicates,
      most((real) => real.rpc.duplicateEthCalls),
    ),
    row(
      "abandoned HTTP requests, most in any run",
      "-",
      most((real) => real.rpc.abandonedRequests),
    ),
    row("eth_call per event, 1 worker", "-", (s) => s.one.rpc.ethCallsPerEvent),
    row(
      "contract calls per citizen stake, 1 worker",
      "-",
      (s) => s.one.rpc.viewCallsPerCitizenStake,
    ),
    row("duplicate contract calls, 1 worker", "-", (s) => s.one.rpc.duplicateViewCalls),
    judged("worker CPU µs per event, 1 worker, counted", cpu, (s) => s.one.workerCpuMicrosPerEvent),
    judged("  no proxy", cpu, (s) => s.control.workerCpuMicrosPerEvent),
    judged("peak RSS MB, 1 worker, counted (flat)", rss, (s) => peakMb(s.one)),
    judged("peak RSS MB of a worker, any run (flat)", rss, (s) =>
      Math.max(...[...countedRuns(s), s.control].map(peakMb)),
    ),
  ]);
}

export const printTables = (runs: SizeRun[]) => print(...runs.map(runTable), summaryTable(runs));
