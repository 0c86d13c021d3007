/**
 * The backfill on a mainnet-shaped chain and on the dense one through a provider-shaped node, each
 * against the raw limit through it, then the missing-log checks. Each run and figure:
 * docs/performance.md, "Mainnet-shaped".
 *
 * `bun bench/mainnet.ts` (20,000 events over 2,000,000 blocks) or `--smoke` (2,000 over 200,000).
 */
import { SeededRandom } from "../devnet/random.ts";
import { mayHoldStakerLogs } from "../indexer/chain/log-bloom.ts";
import { bloomWithFill } from "../test/support/busy-blocks.ts";
import { type ProviderNodeStats, startProviderNode } from "../test/support/provider-node.ts";
import { type SparseChain, spreadBlocks, startSparseChain } from "../test/support/sparse-chain.ts";
import { BadFlag, flag, readFlags, runMain } from "./support/flags.ts";
import { type LoadedScenario, loadScenario, openRun, rpc } from "./support/harness.ts";
import { measureLimit } from "./support/limit.ts";
import {
  byCount,
  columns,
  log,
  print,
  ratio,
  round,
  startReport,
  verdict,
} from "./support/report.ts";

const TARGET_OF_LIMIT = { atLeast: 0.3 };
/** Infura's live cap on eth_getLogs (github.com/INFURA/infura/issues/237). */
const PROVIDER_SPAN = 10_000;
/** Blocks after the last real one: mainnet-shaped, and what the follower runs measure. */
const TAIL_BLOCKS = 100;
/** Above the tail: every tail block is the follower's, never a chunk job's. */
const FOLLOW_FINALITY_DEPTH = 200;
/** Random blooms drawn at each fill to find the share that admits the staker by chance. */
const BLOOM_DRAWS = 5_000;

const over = (run: { eventsPerSecond: number }, limit: { eventsPerSecond: number }) =>
  ratio(run.eventsPerSecond, limit.eventsPerSecond, 3);

type Range = { from: bigint; to: bigint };
type Side = { url: string; range: Range; chunkSize: number };
type Settings = ReturnType<typeof readSettings>;
/** What every step measures against: the loaded scenario, its sparse view and the settings. */
type Chains = LoadedScenario & { sparse: SparseChain; settings: Settings };

/** A provider-shaped node in front of `chainUrl`, and its calls since it started, by method. */
function providerFor(chainUrl: string, provider: Settings["provider"]) {
  const node = startProviderNode(chainUrl, {
    ...provider,
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

/** Each count of `after` less the same of `before`; with `moved`, only those that moved. */
const less = <T extends Record<string, number>>(before: object, after: T, moved = false) =>
  Object.fromEntries(
    Object.entries(after)
      .map(([key, count]) => [key, count - ((before as T)[key] ?? 0)] as const)
      .filter(([, count]) => !moved || count !== 0),
  ) as T;

/** Calls since `before`: the counts (the 429s among them), reads by block form, calls by method. */
function callsSince(before: ProviderNodeStats, after: ProviderNodeStats) {
  const { callsByMethod, stateReadsBy, peakCallsPerSecond: _, ...counts } = after;
  return {
    ...less(before, counts),
    stateReadsBy: less(before.stateReadsBy, stateReadsBy),
    byMethod: less(before.callsByMethod, callsByMethod, true),
  };
}

/**
 * One `worker` (or the follower) through a provider over the side's blocks: its seconds, its CPU,
 * and the calls the provider (and the check node, with `checkNode`) answered.
 */
async function indexThrough(
  { scenario, settings }: Chains,
  { url, range, chunkSize }: Side,
  run: { label: string; role: "worker" | "follow"; checkNode?: boolean },
) {
  log(`${run.role}: ${run.label} through the provider`);
  const provider = providerFor(url, settings.provider);
  // Another provider of the same shape, with its own budget: what RPC_CHECK_URL costs is there.
  const check = run.checkNode ? providerFor(url, settings.provider) : undefined;
  const follow = run.role === "follow";
  const finalityDepth = follow ? FOLLOW_FINALITY_DEPTH : 0;
  const { addresses, chainId } = scenario.deployment;
  const where = { rpcUrl: url, staker: addresses.staker, chainId, maxLogRange: PROVIDER_SPAN };
  const label = `bench_mainnet_${run.label}`;
  await using indexing = await openRun({ ...where, label, chunkSize, finalityDepth });
  try {
    if (follow) await indexing.indexer.ensureCheckpoint(range.from);
    const [child] = await indexing.startIndexers(run.role, [`mainnet-${run.label}`], {
      RPC_URL: provider.url,
      RPC_MAX_REQUESTS_PER_SECOND: String(settings.provider.requestsPerSecond),
      START_BLOCK: String(range.from),
      ...(follow
        ? { FINALITY_DEPTH: String(finalityDepth), METADATA_REFRESH_INTERVAL_MS: "0" }
        : { CONCURRENCY: "4" }),
      ...(check && { RPC_CHECK_URL: check.url }),
    });
    provider.reset();
    check?.reset();
    const cpuBefore = await child!.cpuSeconds();
    const waits = follow ? { queue: false, pollMs: 10 } : {};
    const { to, chunks, seconds } = await indexing.indexRange(range, waits);
    const blocks = Number(to - range.from + 1n);
    const events = await indexing.indexer.store.countEvents(range.from, to);
    return {
      blocks,
      chunks,
      events,
      seconds: round(seconds, 2),
      eventsPerSecond: round(events / seconds, 0),
      blocksPerSecond: round(blocks / seconds, 1),
      /** The process's CPU: beside `seconds`, whether it waited on the budget or the CPU. */
      cpuSeconds: round((await child!.cpuSeconds()) - cpuBefore, 2),
      rpc: provider.calls(),
      checkRpc: check?.calls(),
    };
  } finally {
    provider.stop();
    check?.stop();
  }
}

/** The limit through the same provider: eth_getLogs of the side's blocks in chunks, and COPY. */
async function limitThrough({ node, scenario, settings }: Chains, side: Side) {
  const through = providerFor(side.url, settings.provider);
  const { staker } = scenario.deployment.addresses;
  try {
    const chain = { url: through.url, anvilPid: node.pid, staker };
    return { ...(await measureLimit(chain, side.range, side.chunkSize)), rpc: through.calls() };
  } finally {
    through.stop();
  }
}

async function admittingBlocks(url: string, range: Range, staker: `0x${string}`) {
  const request = rpc(url);
  let admitted = 0;
  for (let n = range.from; n <= range.to; n++) {
    const header = (await request({
      method: "eth_getBlockByNumber",
      params: [`0x${n.toString(16)}`, false],
    })) as { logsBloom: `0x${string}` };
    if (mayHoldStakerLogs(header.logsBloom, staker)) admitted++;
  }
  return admitted;
}

/** The follower over the tail, once with empty blooms and once at each bloom fill. */
async function measureFollows(chains: Chains) {
  const { sparse, scenario, settings } = chains;
  const tail = { from: sparse.sparseHead - BigInt(TAIL_BLOCKS) + 1n, to: sparse.sparseHead };
  const follows = [];
  for (const fill of [undefined, ...settings.fills]) {
    const blooms = fill === undefined ? "empty" : String(fill);
    sparse.setTailFill(fill);
    const admitted = await admittingBlocks(sparse.url, tail, scenario.deployment.addresses.staker);
    const label = `follow_${blooms.replace(".", "_")}`;
    const side = { url: sparse.url, range: tail, chunkSize: 2_000 };
    const run = await indexThrough(chains, side, { label, role: "follow" });
    const receiptsRead = run.rpc.byMethod.eth_getBlockReceipts ?? 0;
    const callsPerBlock = round(run.rpc.calls / run.blocks, 2);
    // The follow process's CPU (`cpuSeconds`) is where the receipts' tries are built.
    follows.push({ fill, admitted, receiptsRead, callsPerBlock, ...run });
  }
  return follows;
}

/** The share of blooms at each fill that admit the staker, over many more than the tail's. */
function bloomShares(fills: number[], seed: string, staker: `0x${string}`, draws: number) {
  const sampled = new SeededRandom(`bloom-shares-${seed}`);
  return fills.map((fill) => {
    let admitted = 0;
    for (let i = 0; i < draws; i++) {
      if (mayHoldStakerLogs(bloomWithFill(fill, sampled), staker)) admitted++;
    }
    return { fill, admitted: round(admitted / draws, 3) };
  });
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
    throw new BadFlag(`--follow-fills takes shares of bloom bits between 0 and 1`);
  }
  const { "latency-ms": latencyMs, "jitter-ms": jitterMs, budget: requestsPerSecond } = flags;
  return { ...flags, fills, provider: { latencyMs, jitterMs, requestsPerSecond } };
}

/** The scenario's chain, and the same blocks spread over --blocks with a busy tail after. */
async function openChains(settings: Settings): Promise<Chains> {
  const { seed, events, fills } = settings;
  const loaded = await loadScenario({ seed, events });
  const { scenario } = loaded;
  const deploy = scenario.deployment.deployBlock;
  const random = new SeededRandom(`mainnet-${seed}`);
  const blocks = Number(scenario.head - deploy);
  const sparse = await startSparseChain(loaded.node.rpcUrl, {
    keepUpTo: deploy,
    placement: spreadBlocks(deploy, blocks, BigInt(settings.blocks), () => random.next()),
    tailBlocks: TAIL_BLOCKS,
    busyTail: { fills, seed: `mainnet-${seed}` },
  });
  const spread = `${scenario.stakerEvents} events spread over ${sparse.sparseHead - deploy} blocks`;
  log(`sparse chain: ${blocks} real blocks of ${spread} (head ${sparse.sparseHead})`);
  return { ...loaded, sparse, settings };
}

/** Every measurement, in order: the limits, the backfills, the follower, the bloom shares. */
async function measure(chains: Chains) {
  const { scenario, node, sparse, settings } = chains;
  const deploy = scenario.deployment.deployBlock;
  const denseSide = { url: node.rpcUrl, range: { from: deploy, to: scenario.head }, chunkSize: 4 };
  const sparseRange = { from: deploy, to: sparse.sparseHead };
  const sparseSide = { url: sparse.url, range: sparseRange, chunkSize: settings["sparse-chunk"] };
  // Each limit asks for the blocks in the largest span that passes: the dense chain in the
  // backfill bench's chunks (4 blocks, under the result cap), the sparse one in the provider's.
  log("limit: eth_getLogs + COPY through the provider, dense then sparse");
  const denseLimit = await limitThrough(chains, denseSide);
  sparse.resetOverhead();
  const sparseLimit = await limitThrough(chains, { ...sparseSide, chunkSize: PROVIDER_SPAN });
  const limitOverhead = sparse.overhead();
  const dense = await indexThrough(chains, denseSide, { label: "dense", role: "worker" });
  sparse.resetOverhead();
  const mainnetShaped = await indexThrough(chains, sparseSide, { label: "sparse", role: "worker" });
  const backfillOverhead = sparse.overhead();
  const checkNode = { label: "sparse_check", role: "worker", checkNode: true } as const;
  const checked = await indexThrough(chains, sparseSide, checkNode);
  const follows = await measureFollows(chains);
  const { staker } = scenario.deployment.addresses;
  const shares = bloomShares(settings.fills, settings.seed, staker, BLOOM_DRAWS);
  const overhead = { backfill: backfillOverhead, limit: limitOverhead };
  return { dense, denseLimit, mainnetShaped, sparseLimit, checked, follows, shares, overhead };
}

async function main() {
  const settings = readSettings();
  const report = startReport("mainnet", settings);
  const chains = await openChains(settings);
  const { scenario, node, sparse } = chains;
  const deploy = scenario.deployment.deployBlock;
  try {
    const figures = await measure(chains);
    report.finish();
    printTables(chains, report.load, figures);
    const { dense, denseLimit, mainnetShaped, sparseLimit, checked, follows } = figures;
    await report.write({
      parameters: {
        sparseBlocks: Number(sparse.sparseHead - deploy),
        realBlocks: Number(scenario.head - deploy),
        providerSpan: PROVIDER_SPAN,
        chunkSizeDense: 4,
        tailBlocks: TAIL_BLOCKS,
      },
      raw: {
        target: TARGET_OF_LIMIT.atLeast,
        dense: { backfill: dense, limit: denseLimit },
        sparse: { backfill: mainnetShaped, limit: sparseLimit },
        sparseWithCheckNode: checked,
        follow: follows,
        bloomShares: figures.shares,
        sparseNodeOverhead: figures.overhead,
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

function printTables(
  { scenario, settings }: Chains,
  load: { before: number[]; after: number[] },
  f: Awaited<ReturnType<typeof measure>>,
) {
  const { provider } = settings;
  const { dense, denseLimit, mainnetShaped, sparseLimit, checked } = f;
  const { backfill: backfillOverhead, limit: limitOverhead } = f.overhead;
  const sparseChunk = settings["sparse-chunk"];
  const chains = [
    { name: "dense", run: dense, limit: denseLimit, chunk: 4 },
    { name: "sparse (mainnet-shaped)", run: mainnetShaped, limit: sparseLimit, chunk: sparseChunk },
  ];
  print(
    `mainnet-shaped backfill: ${scenario.stakerEvents} events, ${provider.latencyMs} ms (+0-${provider.jitterMs}) latency, ${PROVIDER_SPAN}-block eth_getLogs cap, budget ${provider.requestsPerSecond} calls/s; load average ${load.before.join(" ")} before, ${load.after.join(" ")} after`,
    columns(chains, {
      chain: (c) => c.name,
      blocks: (c) => c.run.blocks,
      chunk: (c) => c.chunk,
      "seconds to caught up": (c) => c.run.seconds,
      "events/s": (c) => c.run.eventsPerSecond,
      "limit events/s": (c) => c.limit.eventsPerSecond,
      "/ limit (>= 0.3)": (c) => verdict(over(c.run, c.limit), TARGET_OF_LIMIT),
      calls: (c) => c.run.rpc.calls,
      "over budget": (c) => c.run.rpc.callsOverBudget,
      "calls by method": (c) => byCount(c.run.rpc.byMethod),
    }),
    `the chunk path's check: sparse with the Transfer check ${mainnetShaped.seconds} s, ${over(mainnetShaped, sparseLimit)} of the limit, ${mainnetShaped.rpc.calls} calls (${byCount(mainnetShaped.rpc.byMethod)}); with a second node (RPC_CHECK_URL) instead ${checked.seconds} s, ${over(checked, sparseLimit)} of the limit, ${checked.rpc.calls} calls at RPC_URL (${byCount(checked.rpc.byMethod)}) and ${checked.checkRpc?.calls} at the check node (${byCount(checked.checkRpc?.byMethod ?? {})}), ${checked.rpc.callsOverBudget} + ${checked.checkRpc?.callsOverBudget} over budget`,
    `the follower over the last ${TAIL_BLOCKS} blocks (mainnet-shaped: ~150 transactions each, other contracts' logs), same provider and budget:`,
    columns(f.follows, {
      "bloom bits set": (run) => run.fill ?? "none",
      "blocks admitting the staker": (run) => run.admitted,
      "receipts read": (run) => run.receiptsRead,
      "seconds to caught up": (run) => run.seconds,
      "blocks/s": (run) => run.blocksPerSecond,
      calls: (run) => run.rpc.calls,
      "calls/block": (run) => run.callsPerBlock,
      "follower CPU s": (run) => run.cpuSeconds,
      "over budget": (run) => run.rpc.callsOverBudget,
      "calls by method": (run) => byCount(run.rpc.byMethod),
    }),
    `blooms that admit the staker by chance, of ${BLOOM_DRAWS} random ones at each fill: ${f.shares.map(({ fill, admitted }) => `${fill} full: ${admitted}`).join(", ")}`,
    [
      `logs in eth_getLogs answers (their size, beside their count): dense ${dense.rpc.logsAnswered} (limit ${denseLimit.rpc.logsAnswered}), sparse ${mainnetShaped.rpc.logsAnswered} (limit ${sparseLimit.rpc.logsAnswered})`,
      `worker CPU: dense ${dense.cpuSeconds} s, sparse ${mainnetShaped.cpuSeconds} s; the sparse run's calls at the budget take ${round(mainnetShaped.rpc.calls / provider.requestsPerSecond, 1)} s`,
      `state reads (eth_call, eth_getCode) by how they name the block: dense ${byCount(dense.rpc.stateReadsBy)}; sparse ${byCount(mainnetShaped.rpc.stateReadsBy)}`,
    ].join("\n"),
    `the sparse node's own time: ${round(backfillOverhead.ownMicrosPerRequest, 0)} µs per HTTP request over ${backfillOverhead.requests} requests in the backfill (${round(backfillOverhead.ownMs / 1000, 2)} s of ${mainnetShaped.seconds} s), ${round(limitOverhead.ownMicrosPerRequest, 0)} µs in the limit`,
  );
}

if (import.meta.main) runMain(main);
