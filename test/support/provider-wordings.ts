/**
 * How hosted providers and node clients word their refusals, recorded from public reports (each
 * row names where it was seen) so the provider-shaped node (`provider-node.ts`) answers as they
 * do and the indexer's recognition (`indexer/chain/range-refusals.ts`,
 * `indexer/chain/rate-limits.ts`, `indexer/chain/pruned-state.ts`) is tested against what they really send, not against its own
 * patterns.
 */

/** The query a refusal answers: its blocks, the provider's cap, and where the cap is reached. */
export type RefusedQuery = {
  from: bigint;
  to: bigint;
  /** The provider's cap: blocks for a span refusal, logs for a result refusal. */
  limit: number;
  /** The last block a query from `from` may reach and pass (span: from + limit - 1). */
  lastPassing: bigint;
};

export type RangeRefusalWording = {
  provider: string;
  /** What the provider caps: the block span asked for, or the logs in the answer. */
  cap: "span" | "results";
  code: number;
  /** Some providers also answer with an HTTP error status. */
  httpStatus?: number;
  /** The JSON-RPC error's message (and data, where the provider puts the words there). */
  message: (query: RefusedQuery) => string;
  data?: (query: RefusedQuery) => unknown;
  /** Whether the wording names a range or span that passes (the indexer should use it). */
  suggests: boolean;
  source: string;
};

const hex = (value: bigint) => `0x${value.toString(16)}`;

export const RANGE_REFUSALS: readonly RangeRefusalWording[] = [
  {
    provider: "Alchemy (range and size)",
    cap: "span",
    code: -32600,
    message: (q) =>
      `Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [${hex(q.from)}, ${hex(q.lastPassing)}]`,
    suggests: true,
    source:
      "github.com/BobTheBuidler/dank_mids/issues/772; github.com/bancorprotocol/webapp/issues/523",
  },
  {
    provider: "Alchemy (query timeout)",
    cap: "results",
    code: -32600,
    message: (q) =>
      `Query timeout exceeded. Consider reducing your block range. Based on your parameters and the response size limit, this block range should work: [${hex(q.from)}, ${hex(q.lastPassing)}]`,
    suggests: true,
    source: "github.com/nimiq/wallet/pull/275",
  },
  {
    provider: "Infura (results)",
    cap: "results",
    code: -32005,
    message: (q) => `query returned more than ${q.limit} results`,
    suggests: false,
    source:
      "github.com/INFURA/infura/issues/237 (documented -32005); github.com/ChainSafe/lodestar/issues/2977",
  },
  {
    provider: "Infura (results, with a range)",
    cap: "results",
    code: -32005,
    message: (q) =>
      `query returned more than ${q.limit} results. Try with this block range [${hex(q.from)}, ${hex(q.lastPassing)}].`,
    suggests: true,
    source: "github.com/ponder-sh/ponder packages/utils/src/getLogsRetryHelper.ts (infura, zksync)",
  },
  {
    provider: "Infura (span)",
    cap: "span",
    code: -32602,
    message: (q) => `range ${q.to - q.from + 1n} exceeds limit of ${q.limit}`,
    suggests: true,
    source: "github.com/INFURA/infura/issues/237",
  },
  {
    provider: "QuickNode",
    cap: "span",
    code: -32614,
    httpStatus: 413,
    message: (q) => `eth_getLogs is limited to a ${q.limit.toLocaleString("en-US")} range`,
    suggests: true,
    source: "github.com/OffchainLabs/arbitrum-sdk/issues/609",
  },
  {
    provider: "Ankr",
    cap: "span",
    code: -32600,
    message: () => "block range is too wide",
    suggests: false,
    source: "github.com/ponder-sh/ponder packages/utils/src/getLogsRetryHelper.ts (ankr)",
  },
  {
    provider: "Ankr (newer)",
    cap: "span",
    code: -32602,
    message: (q) => `maximum [from, to] blocks distance: ${q.limit}`,
    suggests: true,
    source: "github.com/ponder-sh/ponder/issues/1940",
  },
  {
    provider: "PublicNode",
    cap: "span",
    code: -32600,
    message: (q) => `maximum block range: ${q.limit}`,
    suggests: true,
    source: "github.com/ponder-sh/ponder packages/utils/src/getLogsRetryHelper.ts (publicnode)",
  },
  {
    provider: "Tenderly (words in the error's data)",
    cap: "span",
    code: -32602,
    message: () => "invalid params",
    data: (q) => ({
      error_id: "4ed94073-0317-4648-a167-107fba5f44b3",
      payload: `range ${q.to - q.from + 1n} is bigger than range limit ${q.limit}`,
    }),
    suggests: true,
    source: "github.com/bobanetwork/boba_legacy/issues/827",
  },
  {
    provider: "reth (and LlamaRPC, which runs it)",
    cap: "results",
    code: -32602,
    message: (q) =>
      `query exceeds max results ${q.limit}, retry with the range ${q.from}-${q.lastPassing}`,
    suggests: true,
    source: "github.com/paradigmxyz/reth/pull/12790; github.com/paradigmxyz/reth/issues/23810",
  },
  {
    provider: "erigon (span)",
    cap: "span",
    code: -32000,
    message: (q) => `query block range exceeds server limit, narrow your filter: ${q.limit}`,
    suggests: true,
    source: "github.com/erigontech/erigon/pull/20784 (--rpc.blockrange.limit)",
  },
  {
    provider: "erigon (results)",
    cap: "results",
    code: -32000,
    message: (q) => `query returns too many logs, narrow your filter: ${q.limit}`,
    suggests: false,
    source: "github.com/erigontech/erigon/pull/20784 (--rpc.logs.maxresults)",
  },
  {
    provider: "cdk-erigon",
    cap: "span",
    code: -32005,
    message: (q) => `block range too large, max range: ${q.limit}`,
    suggests: true,
    source: "github.com/0xPolygon/cdk-erigon/pull/1706",
  },
  {
    // geth itself has no range cap by default (ethereum/go-ethereum#32138, #33163 unmerged);
    // its forks that add one word it so.
    provider: "geth forks (Scroll)",
    cap: "span",
    code: -32000,
    message: () => "block range is bigger than maxBlockRange",
    suggests: false,
    source: "github.com/scroll-tech/go-ethereum/pull/529",
  },
  {
    provider: "geth forks (Morph)",
    cap: "span",
    code: -32000,
    message: (q) =>
      `block range is larger than max block range, block range = ${q.to - q.from + 1n}, max block range = ${q.limit}`,
    suggests: true,
    source: "github.com/enviodev/hyperindex/issues/605",
  },
  {
    provider: "Chainstack",
    cap: "span",
    code: -32600,
    message: () => "Block range limit exceeded.",
    suggests: false,
    source: "github.com/ponder-sh/ponder packages/utils/src/getLogsRetryHelper.ts (chainstack)",
  },
];

export type RateLimitWording = {
  provider: string;
  httpStatus: number;
  code: number;
  message: string;
  /** The error's data, given how long the provider asks to wait. */
  data?: (retryAfterSeconds: number) => unknown;
  source: string;
};

/**
 * A key over its provider's rate or quota. Infura answers over -32005, the code its oversized log
 * queries use too (RANGE_REFUSALS): only the words tell a wait from a range to shrink.
 */
export const RATE_LIMITS: readonly RateLimitWording[] = [
  {
    provider: "Infura (requests per second)",
    httpStatus: 429,
    code: -32005,
    message: "project ID request rate exceeded",
    data: (seconds) => ({
      see: "https://infura.io/docs/ethereum/jsonrpc/ratelimits",
      current_rps: 13.333,
      allowed_rps: 10.0,
      backoff_seconds: seconds,
    }),
    source: "docs.infura.io/api/networks/ethereum/how-to/avoid-rate-limiting",
  },
  {
    provider: "Infura (daily requests)",
    httpStatus: 429,
    code: -32005,
    message: "daily request count exceeded, request rate limited",
    source: "docs.infura.io/api/networks/ethereum/how-to/avoid-rate-limiting",
  },
  {
    provider: "Alchemy (compute units, older link)",
    httpStatus: 429,
    code: 429,
    message:
      "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message. If not, check out https://docs.alchemyapi.io/guides/rate-limits",
    source:
      "github.com/Synthetixio/kwenta/issues/40; github.com/LimeChain/hashport-validator/issues/473",
  },
  {
    provider: "Alchemy (compute units)",
    httpStatus: 429,
    code: 429,
    message:
      "Your app has exceeded its compute units per second capacity. If you have retries enabled, you can safely ignore this message. If not, check out https://docs.alchemy.com/reference/throughput",
    source:
      "github.com/conduitxyz/node/issues/36; github.com/gitcoinco/grants-stack-indexer/issues/156 (where it was taken for a range refusal)",
  },
  {
    // The reports give the body only; 200 is the harder case, where nothing but the body says it.
    provider: "QuickNode",
    httpStatus: 200,
    code: -32007,
    message:
      "15/second request limit reached - reduce calls per second or upgrade your account at quicknode.com",
    source:
      "github.com/wevm/viem src/utils/buildRequest.ts (shouldRetry); github.com/BobTheBuidler/dank_mids/pull/642",
  },
];

export type PrunedStateWording = {
  client: string;
  code: number;
  message: (block: { number: bigint; stateRoot: string }) => string;
  source: string;
};

/** A full node asked for state it no longer keeps (older than its last 128 blocks, say). */
export const PRUNED_STATE: readonly PrunedStateWording[] = [
  {
    client: "geth (hash scheme)",
    code: -32000,
    message: (b) => `missing trie node ${b.stateRoot.slice(2)} (path )`,
    source: "github.com/ethereum/go-ethereum/issues/20874; #16471 (a full node keeps 128 states)",
  },
  {
    client: "geth (path scheme, and bor)",
    code: -32000,
    message: (b) =>
      `missing trie node ${b.stateRoot.slice(2)} (path ) state ${b.stateRoot} is not available, not found`,
    source: "github.com/0xPolygon/bor/issues/1303",
  },
  {
    client: "erigon 3",
    code: -32000,
    message: (b) =>
      `state transitaion failed: seek with txNum=1962853355 but data before txNum=2662500000 is not available: blockNum=${b.number}, txNum=1962853355`,
    source: "github.com/erigontech/erigon/issues/13198",
  },
  {
    client: "reth",
    code: -32603,
    message: (b) => `State at block #${b.number} is pruned`,
    source: "github.com/paradigmxyz/reth/pull/4092",
  },
  {
    client: "nethermind",
    code: -32002,
    message: () =>
      "No state available for block 0xe7b1e5b5b5c730816ef2b9627a85c227f6924f27504f1b36cc7328bff79ecc6e",
    source: "github.com/NethermindEth/nethermind/issues/9277; #13603",
  },
  {
    client: "openethereum",
    code: -32000,
    message: () =>
      "This request is not supported because your node is running with state pruning. Run with --pruning=archive.",
    source: "github.com/openethereum/parity-ethereum/issues/11594",
  },
];
