import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createPublicClient, encodeFunctionData, erc20Abi, http } from "viem";
import { startAnvil } from "../../devnet/anvil.ts";
import { startRpcProxy } from "../support/rpc-proxy.ts";
import { functionNames } from "../support/view-calls.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** Runs `bun bench/<name>.ts --smoke [flags]` and returns the report it wrote. */
async function runSmoke(name: string, flags: string[] = []) {
  const child = Bun.spawn([process.execPath, `bench/${name}.ts`, "--smoke", ...flags], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0)
    throw new Error(`bench/${name}.ts --smoke exited ${code}:\n${stderr.slice(-3000)}`);
  const path = /^wrote (.+\.json)$/m.exec(stdout)?.[1];
  if (!path) throw new Error(`bench/${name}.ts --smoke wrote no report:\n${stdout}`);
  return JSON.parse(await readFile(path, "utf8")) as {
    smoke: boolean;
    machine: { cpus: number };
    versions: { bun: string; anvil: string; postgres: string };
    parameters: Record<string, unknown>;
    raw: Record<string, unknown>;
    ratios: Record<string, number | null>;
  };
}

type RealRun = {
  workers: number;
  path: "direct" | "counting" | "latency";
  proxyDelayMs: number;
  events: number;
  citizenStakes: number;
  workerCpuMicrosPerEvent: number | null;
  workerCpuByThread: Record<"main" | "jit" | "gc" | "allocator" | "http" | "other", number>;
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
  // Every worker's JavaScript runs on its main thread, and a new process compiles it there.
  expect(run.workerCpuByThread.main).toBeGreaterThan(0);
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

function expectReport(report: Awaited<ReturnType<typeof runSmoke>>, ratioFields: string[]) {
  expect(report.smoke).toBe(true);
  expect(report.machine.cpus).toBeGreaterThan(0);
  expect(report.versions.postgres).not.toBe("unknown");
  for (const field of ratioFields) expect(typeof report.ratios[field]).toBe("number");
}

describe("benchmarks in smoke size", () => {
  test("the backfill bench completes and reports each worker count and the latency run against the limit, with what the workers asked the node", async () => {
    const report = await runSmoke("backfill");
    expect(report.parameters.eventSizes).toEqual([2000]);
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
    // The chunk write time against stored history, at the smoke's one point.
    const history = report.raw.history as { storedEvents: number; chunkWriteMs: number }[];
    expect(history.map((point) => point.storedEvents)).toEqual([10_000]);
    expect(history[0]!.chunkWriteMs).toBeGreaterThan(0);
  }, 300_000);

  test("the mainnet-shaped bench indexes the sparse chain through the provider within its budget, beside the dense one", async () => {
    // One bloom fill beside the empty one, not three: the follower still settles the blocks
    // whose bloom admits the staker (3 of the 100 at 0.44), and each fill costs a follow run.
    const report = await runSmoke("mainnet", ["--follow-fills", "0.44"]);
    expectReport(report, ["dense_over_limit", "sparse_over_limit"]);
    type Side = {
      backfill: {
        events: number;
        blocks: number;
        rpc: {
          calls: number;
          callsOverBudget: number;
          stateReadsBy: { hash: number; number: number; tag: number };
        };
      };
      limit: { events: number };
    };
    const { dense, sparse } = report.raw as { dense: Side; sparse: Side };
    // The same events, indexed from a chain thousands of times longer, with no 429.
    expect(sparse.backfill.events).toBe(dense.backfill.events);
    expect(sparse.limit.events).toBe(dense.limit.events);
    expect(sparse.backfill.events).toBe(dense.limit.events);
    expect(sparse.backfill.blocks).toBeGreaterThan(1_000 * dense.backfill.blocks);
    expect(sparse.backfill.rpc.callsOverBudget).toBe(0);
    expect(dense.backfill.rpc.callsOverBudget).toBe(0);
    expect(sparse.backfill.rpc.calls).toBeGreaterThan(0);
    // Every read names its block by hash on the sparse chain too, as on a mainnet node: one
    // that answered a hash it never gave out would have the indexer read by number.
    expect(sparse.backfill.rpc.stateReadsBy.hash).toBeGreaterThan(0);
    expect(sparse.backfill.rpc.stateReadsBy.number).toBe(0);
    // The follower over the mainnet-shaped tail settles each block whose bloom admits the
    // staker by its receipts (a retried read counts twice), and reads none where none admits it.
    const follow = (
      report.raw as { follow: { fill?: number; admitted: number; receiptsRead: number }[] }
    ).follow;
    expect(follow.map((run) => run.fill)).toEqual([undefined, 0.44]);
    expect(follow[0]!).toMatchObject({ admitted: 0, receiptsRead: 0 });
    expect(follow[1]!.admitted).toBeGreaterThan(0);
    expect(follow[1]!.receiptsRead).toBeGreaterThanOrEqual(follow[1]!.admitted);
  }, 600_000);

  test("the lag bench completes and reports p95 against the target", async () => {
    expectReport(await runSmoke("lag"), ["p95_over_target"]);
  }, 300_000);

  test("the API bench completes and reports the API, cached and not, as of a block, and the soak against the base", async () => {
    const report = await runSmoke("api");
    expectReport(report, [
      "uncached_s1_over_base",
      "uncached_list_over_base",
      "cached_s1_over_base",
      "not_modified_s1_over_base",
      "uncached_s1_p99_over_base",
      "as_of_s1_over_uncached_s1",
      "as_of_list_over_uncached_list",
      "soak_last_over_first",
    ]);
    expect(report.parameters.loadAverageBefore).toHaveLength(3);
  }, 300_000);
});

describe("the proxy the backfill bench counts the indexer's calls with", () => {
  test("counts HTTP requests, batch elements by method, repeated eth_calls, the calls inside a deployless multicall, and requests a client gave up on", async () => {
    const node = await startAnvil();
    const proxy = startRpcProxy(node.rpcUrl, {
      delayMs: 0,
      functionNames: functionNames([erc20Abi]),
    });
    const slow = startRpcProxy(node.rpcUrl, { delayMs: 300 });
    try {
      const to = "0x000000000000000000000000000000000000dEaD";
      const totalSupply = encodeFunctionData({ abi: erc20Abi, functionName: "totalSupply" });
      const balanceOf = encodeFunctionData({
        abi: erc20Abi,
        functionName: "balanceOf",
        args: [to],
      });
      const batching = createPublicClient({ transport: http(proxy.url, { batch: true }) });
      const blockNumber = await batching.getBlockNumber();
      // One HTTP request carrying the same eth_call twice.
      await Promise.all([
        batching.call({ to, data: totalSupply, blockNumber }),
        batching.call({ to, data: totalSupply, blockNumber }),
      ]);
      // One eth_call carrying both reads in a deployless multicall.
      const multicalling = createPublicClient({
        transport: http(proxy.url),
        batch: { multicall: { deployless: true } },
      });
      await Promise.all([
        multicalling.call({ to, data: totalSupply, blockNumber }),
        multicalling.call({ to, data: balanceOf, blockNumber }),
      ]);
      const tally = proxy.tally();
      expect(tally).toMatchObject({
        httpRequests: 3,
        calls: 4,
        callsByMethod: { eth_blockNumber: 1, eth_call: 3 },
        ethCalls: 3,
        duplicateEthCalls: 1,
        multicallEthCalls: 1,
        singleEthCallsByFunction: { totalSupply: 2 },
        viewCalls: 4,
        viewCallsByFunction: { totalSupply: 3, balanceOf: 1 },
        duplicateViewCalls: 2,
        duplicateViewCallsByFunction: { totalSupply: 2 },
        unreadableBodies: 0,
        abandonedRequests: 0,
      });
      expect(tally.requestBytes).toBeGreaterThan(0);
      expect(tally.responseBytes).toBeGreaterThan(0);
      proxy.reset();
      expect(proxy.tally()).toMatchObject({ httpRequests: 0, calls: 0, duplicateEthCalls: 0 });

      const gaveUp = fetch(slow.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
        signal: AbortSignal.timeout(50),
      });
      await expect(gaveUp).rejects.toThrow();
      const answered = await fetch(slow.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] }),
      });
      expect(((await answered.json()) as { result: string }).result).toBe("0x7a69");
      // The abandoned request is counted once the node has answered it, after its client left.
      const deadline = Date.now() + 5_000;
      while (slow.tally().abandonedRequests === 0 && Date.now() < deadline) await Bun.sleep(10);
      const delayed = slow.tally();
      expect(delayed.httpRequests).toBe(2);
      expect(delayed.abandonedRequests).toBe(1);
      expect(delayed.slowestRequestMs).toBeGreaterThanOrEqual(300);
    } finally {
      await proxy.stop();
      await slow.stop();
      await node.stop();
    }
  });
});
