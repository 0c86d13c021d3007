/**
 * What one `bench:backfill` run measures, declared once: `bench/backfill.ts` produces these
 * and `backfill-tables.ts` renders them, so neither imports the other.
 */

import type { RpcTally } from "../../test/support/rpc-proxy.ts";
import type { ThreadRole } from "./backfill-threads.ts";
import type { ScenarioSpec } from "./scenario-cache.ts";

/** The workers' way to the node: straight, through the counting proxy, or through a slow one. */
export type RpcPath = "direct" | "counting" | "latency";

/** The raw limit through one path: eth_getLogs chunk by chunk, each chunk COPYed into Postgres. */
export type LimitRun = {
  events: number;
  storedRows: number;
  chunks: number;
  seconds: number;
  eventsPerSecond: number;
  fetchSeconds: number;
  copySeconds: number;
  cores: { anvil: number; postgres: number; bench: number };
};

/** A path's fastest limit round, with every round's rate. */
export type BestLimitRun = LimitRun & { roundsEventsPerSecond: number[] };

/** The node's own cost of one view call at the head and at old blocks. */
export type NodeProbe = {
  calls: number;
  msPerCallAtHead: number;
  msPerCallAtHeadMinusOne: number;
  msPerCallAtMiddleBlock: number;
  middleBlock: bigint;
};

/** The backfill chunk by chunk in one process, fetching and writing timed apart. */
export type PhasesRun = {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  fetchSeconds: number;
  writeSeconds: number;
  slowestChunks: { from: string; events: number; fetchMs: number; writeMs: number }[];
};

/** What the workers asked the node during one backfill, against what it indexed. */
export type RpcFigures = RpcTally & {
  ethCallsPerCitizenStake: number | null;
  ethCallsPerEvent: number | null;
  viewCallsPerCitizenStake: number | null;
  callsPerEvent: number | null;
};

/** One real backfill: worker processes taking the chunk jobs of the whole chain. */
export type RealRun = {
  workers: number;
  concurrencyPerWorker: number;
  path: RpcPath;
  proxyDelayMs: number;
  chunks: number;
  events: number;
  citizenStakes: number;
  stakedCitizens: number;
  seconds: number;
  eventsPerSecond: number;
  /** Null when the run went to the node without a proxy (nothing counted). */
  rpc: RpcFigures | null;
  workerCpuSeconds: number;
  workerCpuMicrosPerEvent: number | null;
  /** The same CPU seconds by thread (backfill-threads.ts): the JIT's share is each process's own. */
  workerCpuByThread: Record<ThreadRole, number>;
  /** VmHWM of each worker process when caught up: the most it ever held resident. */
  workerPeakRssBytes: number[];
  reproject: { seconds: number; eventsPerSecond: number };
  cores: {
    workers: number;
    anvil: number;
    postgres: number;
    redis: number;
    benchAndProxy: number;
  };
  chunkMs: { p50: number; p95: number; max: number | null; sum: number };
};

/** A run whose calls went through a proxy and were counted. */
export type CountedRun = RealRun & { rpc: RpcFigures };

/** Every measurement on one scenario size, against one loaded node. */
export type SizeRun = {
  spec: ScenarioSpec;
  /** The node's peak RSS over the whole size: the loaded chain and every run against it. */
  nodePeakRssBytes: number;
  blocks: number;
  fromBlock: bigint;
  head: bigint;
  cacheGenerated: boolean;
  cacheLoadSeconds: number;
  scenario: {
    stakerEvents: number;
    transactions: number;
    citizensStakedAtEnd: number;
    generatedSeconds: number;
    stateBytes: number;
  };
  nodeProbe: NodeProbe;
  phases: PhasesRun | undefined;
  limit: { direct: BestLimitRun; counting: BestLimitRun; latency: BestLimitRun | undefined };
  real: CountedRun[];
  control: RealRun;
  latency: CountedRun | undefined;
};
