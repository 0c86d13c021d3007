/**
 * The backfill on a mainnet-shaped chain through a provider-shaped node: the scenario's events
 * spread over millions of blocks (test/support/sparse-chain.ts presents the cached dense devnet
 * so), reached through 50 ms of latency with jitter, a 10,000-block eth_getLogs cap worded as
 * Infura words it, and a request budget answered with 429 beyond (provider-node.ts). The same
 * run on the dense chain, through the same provider, stands beside it. Each backfill is compared
 * with the raw limit through the same node: eth_getLogs of the same blocks in the provider's
 * largest span, and COPY (support/harness.ts).
 *
 * The missing-log checks are measured beside: the sparse backfill again with a second node
 * (RPC_CHECK_URL, another provider of the same shape and budget) instead of the Transfer check,
 * and the follower over the chain's last 100 blocks, shaped like mainnet's (busy-blocks.ts),
 * first with blooms that admit nothing (no check fires) and then at each `--follow-fills`
 * share of bloom bits set: every bloom that admits the staker costs a re-ask by hash and the
 * block's receipts, through the same provider budget.
 *
 * `bun bench/mainnet.ts` (20,000 events over 2,000,000 blocks) or `--smoke` (2,000 over 200,000).
 */
import { SeededRandom } from "../devnet/random.ts";
import { mayHoldStakerLogs } from "../indexer/chain/log-bloom.ts";
import { bloomWithFill } from "../test/support/busy-blocks.ts";
import { type ProviderNodeStats, startProviderNode } from "../test/support/provider-node.ts";
import { spreadBlocks, startSparseChain } from "../test/support/sparse-chain.ts";
import { BadFlag, flag, readFlags, runMain } from "./support/flags.ts";
import { measureLimit, openRun, rpc } from "./support/harness.ts";
import {
  byCount,
  loadAverage,
  log,
  ratio,
  round,
  table,
  verdict,
  writeReport,
} from "./support/report.ts";
import { type CachedScenario, defaultWallets, loadScenario } from "./support/scenario-cache.ts";

const TARGET_OF_LIMIT = { atLeast: 0.3 };
/** Infura's live cap on eth_getLogs (github.com/INFURA/infura/issues/237). */
const PROVIDER_SPAN = 10_000;
/** Blocks after the last real one: mainnet-shaped, and what the follower runs measure. */
const TAIL_BLOCKS = 100;
/** Above the tail: every tail block is the follower's, never a chunk job's. */
const FOLLOW_FINALITY_DEPTH = 200;

/** A run's rate over its limit's. */
const over = (run: { eventsPerSecond: number }, limit: { eventsPerSecond: number }) =>
  ratio(run.eventsPerSecond, limit.eventsPerSecond, 3);

type Provider = { latencyMs: number; jitterMs: number; requestsPerSecond: number };
type Range = { from: bigint; to: bigint };

/** A provider-shaped node in front of `chainUrl`, and its calls since it started, by method. */
function providerFor(chainUrl: string, provider: Provider) {
  const node = startProviderNode(chainUrl, {
    latencyMs: provider.latencyMs,
    jitterMs: provider.jitterMs,
    logs: { maxSpan: PROVIDER_SPAN, wording: "Infura (span)" },
    budget: { requestsPerSecond: provider.requestsPerSecond },
    seed: "mainnet-bench",
  });
  let before = node.stats();
  return {
    ...node,
    reset() {
      before = node.stats();
    },
    calls: () => callsSince(before, node.stats()),
  };
}

/** Calls since `before`, by method, and the 429s among them. */
function callsSince(before: ProviderNodeStats, after: ProviderNodeStats) {
  const byMethod: Record<string, number> = {};
  for (const [method, count] of Object.entries(after.callsByMethod)) {
    const since = count - (before.callsByMethod[method] ?? 0);
    if (since > 0) byMethod[method] = since;
  }
  const since = (of: (stats: ProviderNodeStats) => number) => of(after) - of(before);
  return {
    calls: since((s) => s.calls),
    httpRequests: since((s) => s.httpRequests),
    callsOverBudget: since((s) => s.callsOverBudget),
    refusedLogRanges: since((s) => s.refusedLogRanges),
    logsAnswered: since((s) => s.logsAnswered),
    stateReadsBy: {
      hash: since((s) => s.stateReadsBy.hash),
      number: since((s) => s.stateReadsBy.number),
      tag: since((s) => s.stateReadsBy.tag),
    },
    byMethod,
  };
}

/**
 * One `worker` (or, for `role: "follow"`, the follower) through a provider in front of
 * `chainUrl`, from `range.from` until the checkpoint reaches `range.to`: its seconds, its CPU,
 * and the calls the provider (and the check node, with `checkNode`) answered.
 */
async function indexThrough(
  scenario: CachedScenario,
  chainUrl: string,
  range: Range,
  settings: {
    label: string;
    chunkSize: number;
    provider: Provider;
    role: "worker" | "follow";
    checkNode?: boolean;
  },
) {
  const provider = providerFor(chainUrl, settings.provider);
  // Another provider of the same shape, with its own budget: what RPC_CHECK_URL costs is there.
  const check = settings.checkNode ? providerFor(chainUrl, settings.provider) : undefined;
  const follow = settings.role === "follow";
  const finalityDepth = follow ? FOLLOW_FINALITY_DEPTH : 0;
  await using run = await openRun({
    label: `bench_mainnet_${settings.label}`,
    rpcUrl: chainUrl,
    staker: scenario.deployment.addresses.staker,
    chainId: scenario.deployment.chainId,
    chunkSize: settings.chunkSize,
    maxLogRange: PROVIDER_SPAN,
    finalityDepth,
  });
  try {
    if (follow) await run.indexer.ensureCheckpoint(range.from);
    const child = run.spawn(`mainnet-${settings.label}`, ["scripts/cli.ts", settings.role], {
      RPC_URL: provider.url,
      RPC_MAX_REQUESTS_PER_SECOND: String(settings.provider.requestsPerSecond),
      START_BLOCK: String(range.from),
      ...(follow
        ? { FINALITY_DEPTH: String(finalityDepth), METADATA_REFRESH_INTERVAL_MS: "0" }
        : { CONCURRENCY: "4" }),
      ...(check && { RPC_CHECK_URL: check.url }),
    });
    await run.waitForWorkers(follow ? "follow" : "chunks", 1);
    provider.reset();
    check?.reset();
    const cpuBefore = await child.cpuSeconds();
    const started = performance.now();
    const { to, chunks } = follow
      ? { to: range.to, chunks: 0 }
      : await run.indexer.enqueueBackfill({ startBlock: range.from, to: range.to });
    await run.waitIndexed(to, (follow ? 10 : 30) * 60_000, follow ? 10 : 20);
    const seconds = (performance.now() - started) / 1000;
    return {
      blocks: Number(to - range.from + 1n),
      chunks,
      events: await run.indexer.store.countEvents(range.from, to),
      seconds: round(seconds, 2),
      exactSeconds: seconds,
      /** The process's CPU: beside `seconds`, whether it waited on the budget or the CPU. */
      cpuSeconds: round((await child.cpuSeconds()) - cpuBefore, 2),
      rpc: provider.calls(),
      checkRpc: check?.calls(),
    };
  } finally {
    provider.stop();
    check?.stop();
  }
}

type Indexed = Awaited<ReturnType<typeof indexThrough>>;
type Backfilled = ReturnType<typeof backfillFigures>;
type LimitThrough = Awaited<ReturnType<typeof limitThrough>>;
type Overhead = ReturnType<Awaited<ReturnType<typeof startSparseChain>>["overhead"]>;

/** A backfill's figures as the report has always named them. */
const backfillFigures = ({ cpuSeconds, exactSeconds, ...run }: Indexed) => ({
  ...run,
  eventsPerSecond: round(run.events / exactSeconds, 0),
  workerCpuSeconds: cpuSeconds,
});

/** The follower's figures over the tail, at one bloom fill. */
function followFigures(fill: number | undefined, admitted: number, run: Indexed) {
  return {
    fill,
    admitted,
    blocks: run.blocks,
    seconds: run.seconds,
    blocksPerSecond: round(run.blocks / run.exactSeconds, 1),
    callsPerBlock: round(run.rpc.calls / run.blocks, 2),
    /** The follow process's CPU: the receipts' tries are built there. */
    cpuSeconds: run.cpuSeconds,
    receiptsRead: run.rpc.byMethod.eth_getBlockReceipts ?? 0,
    rpc: run.rpc,
  };
}

async function limitThrough(
  chain: { url: string; anvilPid: number; staker: `0x${string}` },
  range: Range,
  chunkSize: number,
  provider: Provider,
) {
  const through = providerFor(chain.url, provider);
  try {
    return {
      ...(await measureLimit({ ...chain, url: through.url }, range, chunkSize)),
      rpc: through.calls(),
    };
  } finally {
    through.stop();
  }
}

function readSettings() {
  const flags = readFlags({
    events: flag.number("20000", "2000"),
    blocks: flag.number("2000000", "200000"),
    seed: flag.string("bench"),
    "latency-ms": flag.number("50", undefined, 0),
    "jitter-ms": flag.number("20", undefined, 0),
    budget: flag.number("25"),
    // On a thin chain most chunks are empty, and each costs its header reads besides its
    // eth_getLogs: chunks of several provider spans spend less of the budget. Ten spans: 926
    // calls against 1,004 with five (fewer headers, fuller multicalls); twenty made 895 but run
    // their event-heavy chunks one at a time (each holds more than EVENTS_IN_FLIGHT).
    "sparse-chunk": flag.number("100000"),
    "follow-fills": flag.string("0.44,0.6,0.75"),
  });
  const fills = flags["follow-fills"].split(",").map(Number);
  if (fills.some((fill) => !(fill > 0 && fill < 1))) {
    throw new BadFlag(
      `--follow-fills: shares of bloom bits between 0 and 1, got ${flags["follow-fills"]}`,
    );
  }
  const provider: Provider = {
    latencyMs: flags["latency-ms"],
    jitterMs: flags["jitter-ms"],
    requestsPerSecond: flags.budget,
  };
  return { ...flags, fills, provider };
}

async function main() {
  const settings = readSettings();
  const { provider, fills, seed } = settings;
  const startedAt = new Date().toISOString();
  const loadBefore = loadAverage();
  const spec = { seed, events: settings.events, wallets: defaultWallets(settings.events) };
  const { scenario, node } = await loadScenario(spec, log);
  const { deployBlock: deploy, addresses } = scenario.deployment;
  const random = new SeededRandom(`mainnet-${seed}`);
  const sparse = await startSparseChain(node.rpcUrl, {
    keepUpTo: deploy,
    placement: spreadBlocks(deploy, Number(scenario.head - deploy), BigInt(settings.blocks), () =>
      random.next(),
    ),
    tailBlocks: TAIL_BLOCKS,
    busyTail: { fills, seed: `mainnet-${seed}` },
  });
  try {
    const sparseRange = { from: deploy, to: sparse.sparseHead };
    const denseRange = { from: deploy, to: scenario.head };
    log(
      `sparse chain: ${scenario.head - deploy} real blocks of ${scenario.stakerEvents} events spread over ${sparse.sparseHead - deploy} blocks (head ${sparse.sparseHead})`,
    );
    // Each limit asks for the blocks in the largest span that passes: the dense chain in the
    // backfill bench's chunks (4 blocks, under the result cap), the sparse one in the provider's.
    log("limit: eth_getLogs + COPY through the provider, dense then sparse");
    const chain = { anvilPid: node.pid, staker: addresses.staker };
    const denseLimit = await limitThrough({ ...chain, url: node.rpcUrl }, denseRange, 4, provider);
    sparse.resetOverhead();
    const sparseLimit = await limitThrough(
      { ...chain, url: sparse.url },
      sparseRange,
      PROVIDER_SPAN,
      provider,
    );
    const limitOverhead = sparse.overhead();
    const backfill = async (
      label: string,
      url: string,
      range: Range,
      chunkSize: number,
      checkNode = false,
    ) => {
      log(`backfill: ${label} through the provider`);
      const run = await indexThrough(scenario, url, range, {
        label,
        chunkSize,
        provider,
        role: "worker",
        checkNode,
      });
      return backfillFigures(run);
    };
    const dense = await backfill("dense", node.rpcUrl, denseRange, 4);
    sparse.resetOverhead();
    const mainnetShaped = await backfill(
      "sparse",
      sparse.url,
      sparseRange,
      settings["sparse-chunk"],
    );
    const backfillOverhead = sparse.overhead();
    const checked = await backfill(
      "sparse_check",
      sparse.url,
      sparseRange,
      settings["sparse-chunk"],
      true,
    );
    const tail = { from: sparse.sparseHead - BigInt(TAIL_BLOCKS) + 1n, to: sparse.sparseHead };
    const follows: ReturnType<typeof followFigures>[] = [];
    const request = rpc(sparse.url);
    for (const fill of [undefined, ...fills]) {
      const blooms = fill === undefined ? "empty" : String(fill);
      log(`follow: the last ${TAIL_BLOCKS} blocks, blooms ${blooms} full`);
      sparse.setTailFill(fill);
      let admitted = 0;
      for (let n = tail.from; n <= tail.to; n++) {
        const header = (await request({
          method: "eth_getBlockByNumber",
          params: [`0x${n.toString(16)}`, false],
        })) as { logsBloom: `0x${string}` };
        if (mayHoldStakerLogs(header.logsBloom, addresses.staker)) admitted++;
      }
      const label = `follow_${blooms.replace(".", "_")}`;
      const run = await indexThrough(scenario, sparse.url, tail, {
        label,
        chunkSize: 2_000,
        provider,
        role: "follow",
      });
      follows.push(followFigures(fill, admitted, run));
    }
    const loadAfter = loadAverage();
    // The share of blooms at each fill that admit the staker, over many more than the tail's.
    const draws = 5_000;
    const sampled = new SeededRandom(`bloom-shares-${seed}`);
    const shares = fills.map((fill) => {
      let admitted = 0;
      for (let i = 0; i < draws; i++) {
        if (mayHoldStakerLogs(bloomWithFill(fill, sampled), addresses.staker)) admitted++;
      }
      return { fill, admitted: round(admitted / draws, 3) };
    });

    const figures = { scenario, provider, loadBefore, loadAfter, dense, denseLimit, mainnetShaped };
    const more = { sparseLimit, checked, follows, draws, shares, backfillOverhead, limitOverhead };
    printTables({ ...figures, ...more, sparseChunk: settings["sparse-chunk"] });
    await writeReport({
      name: "mainnet",
      smoke: settings.smoke,
      startedAt,
      parameters: {
        seed,
        events: settings.events,
        sparseBlocks: Number(sparse.sparseHead - deploy),
        realBlocks: Number(scenario.head - deploy),
        provider,
        providerSpan: PROVIDER_SPAN,
        chunkSizeDense: 4,
        chunkSizeSparse: settings["sparse-chunk"],
        followFills: fills,
        tailBlocks: TAIL_BLOCKS,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadAfter,
      },
      raw: {
        target: TARGET_OF_LIMIT.atLeast,
        dense: { backfill: dense, limit: denseLimit },
        sparse: { backfill: mainnetShaped, limit: sparseLimit },
        sparseWithCheckNode: checked,
        follow: follows,
        bloomShares: shares,
        sparseNodeOverhead: { backfill: backfillOverhead, limit: limitOverhead },
      },
      ratios: {
        dense_over_limit: over(dense, denseLimit),
        sparse_over_limit: over(mainnetShaped, sparseLimit),
        sparse_calls_over_budget: mainnetShaped.rpc.callsOverBudget,
        dense_calls_over_budget: dense.rpc.callsOverBudget,
        sparse_check_node_over_limit: over(checked, sparseLimit),
        ...Object.fromEntries(
          follows.map((run) => [`follow_seconds_${run.fill ?? "empty"}`, run.seconds]),
        ),
      },
    });
  } finally {
    sparse.stop();
    await node.stop();
  }
}

/** The report's figures as tables and lines on stdout. */
function printTables(f: {
  scenario: CachedScenario;
  provider: Provider;
  loadBefore: number[];
  loadAfter: number[];
  dense: Backfilled;
  denseLimit: LimitThrough;
  mainnetShaped: Backfilled;
  sparseLimit: LimitThrough;
  checked: Backfilled;
  follows: ReturnType<typeof followFigures>[];
  draws: number;
  shares: { fill: number; admitted: number }[];
  backfillOverhead: Overhead;
  limitOverhead: Overhead;
  sparseChunk: number;
}) {
  const { scenario, provider, loadBefore, loadAfter, dense, denseLimit, mainnetShaped } = f;
  const { sparseLimit, checked, follows, draws, shares, backfillOverhead, limitOverhead } = f;
  const settings = { "sparse-chunk": f.sparseChunk };
  console.log(
    `\nmainnet-shaped backfill: ${scenario.stakerEvents} events, ${provider.latencyMs} ms (+0-${provider.jitterMs}) latency, ${PROVIDER_SPAN}-block eth_getLogs cap, budget ${provider.requestsPerSecond} calls/s; load average ${loadBefore.join(" ")} before, ${loadAfter.join(" ")} after\n`,
  );
  console.log(
    table([
      [
        "chain",
        "blocks",
        "chunk",
        "seconds to caught up",
        "events/s",
        "limit events/s",
        "/ limit (>= 0.3)",
        "calls",
        "over budget",
        "calls by method",
      ],
      ...[
        ["dense", dense, denseLimit, 4] as const,
        ["sparse (mainnet-shaped)", mainnetShaped, sparseLimit, settings["sparse-chunk"]] as const,
      ].map(([name, run, limit, chunk]) => [
        name,
        run.blocks,
        chunk,
        run.seconds,
        run.eventsPerSecond,
        limit.eventsPerSecond,
        verdict(over(run, limit), TARGET_OF_LIMIT),
        run.rpc.calls,
        run.rpc.callsOverBudget,
        byCount(run.rpc.byMethod),
      ]),
    ]),
  );
  console.log(
    `\nthe chunk path's check: sparse with the Transfer check ${mainnetShaped.seconds} s, ${over(mainnetShaped, sparseLimit)} of the limit, ${mainnetShaped.rpc.calls} calls (${byCount(mainnetShaped.rpc.byMethod)}); with a second node (RPC_CHECK_URL) instead ${checked.seconds} s, ${over(checked, sparseLimit)} of the limit, ${checked.rpc.calls} calls at RPC_URL (${byCount(checked.rpc.byMethod)}) and ${checked.checkRpc?.calls} at the check node (${byCount(checked.checkRpc?.byMethod ?? {})}), ${checked.rpc.callsOverBudget} + ${checked.checkRpc?.callsOverBudget} over budget`,
  );
  console.log(
    `\nthe follower over the last ${TAIL_BLOCKS} blocks (mainnet-shaped: ~150 transactions each, other contracts' logs), same provider and budget:\n`,
  );
  console.log(
    table([
      [
        "bloom bits set",
        "blocks admitting the staker",
        "receipts read",
        "seconds to caught up",
        "blocks/s",
        "calls",
        "calls/block",
        "follower CPU s",
        "over budget",
        "calls by method",
      ],
      ...follows.map((run) => [
        run.fill ?? "none",
        run.admitted,
        run.receiptsRead,
        run.seconds,
        run.blocksPerSecond,
        run.rpc.calls,
        run.callsPerBlock,
        run.cpuSeconds,
        run.rpc.callsOverBudget,
        byCount(run.rpc.byMethod),
      ]),
    ]),
  );
  console.log(
    `\nblooms that admit the staker by chance, of ${draws} random ones at each fill: ${shares.map(({ fill, admitted }) => `${fill} full: ${admitted}`).join(", ")}`,
  );
  console.log(
    `\nlogs in eth_getLogs answers (their size, beside their count): dense ${dense.rpc.logsAnswered} (limit ${denseLimit.rpc.logsAnswered}), sparse ${mainnetShaped.rpc.logsAnswered} (limit ${sparseLimit.rpc.logsAnswered})`,
  );
  console.log(
    `worker CPU: dense ${dense.workerCpuSeconds} s, sparse ${mainnetShaped.workerCpuSeconds} s; the sparse run's calls at the budget take ${round(mainnetShaped.rpc.calls / provider.requestsPerSecond, 1)} s`,
  );
  const readsBy = ({ rpc }: typeof dense) =>
    Object.entries(rpc.stateReadsBy)
      .map(([form, count]) => `${count} by ${form}`)
      .join(", ");
  console.log(
    `state reads (eth_call, eth_getCode): dense ${readsBy(dense)}; sparse ${readsBy(mainnetShaped)}`,
  );
  console.log(
    `\nthe sparse node's own time: ${round(backfillOverhead.ownMicrosPerRequest, 0)} µs per HTTP request over ${backfillOverhead.requests} requests in the backfill (${round(backfillOverhead.ownMs / 1000, 2)} s of ${mainnetShaped.seconds} s), ${round(limitOverhead.ownMicrosPerRequest, 0)} µs in the limit`,
  );
}

if (import.meta.main) runMain(main);
