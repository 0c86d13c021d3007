/**
 * A dense devnet presented as a sparse, mainnet-shaped chain. anvil cannot hold millions of
 * blocks with their states (1,000 mined empty blocks took it from 139 MB to 479 MB), so this
 * node spreads the devnet's few real blocks over millions of block numbers and synthesizes the
 * empty blocks between them:
 *
 * - Real block r (after the deployment) is numbered v(r); blocks up to the deployment keep
 *   their numbers. The gaps follow `placement` (heavy-tailed: long quiet stretches, bursts).
 * - Every block's hash is keccak256(number, hash of the real block at or before it), and its
 *   parentHash is the hash of the number before, so the chain links; an empty block copies the
 *   header of the real block before it (its state root, its time) with no transactions.
 * - A read at any block (eth_call, eth_getCode, …) is answered from the state of the real block
 *   at or before it; eth_getLogs asks the devnet for the real blocks inside the range and
 *   renumbers what comes back; receipts and transactions are renumbered the same way.
 * - eth_blockNumber, and the latest, safe and finalized tags, are the sparse head: the last real
 *   block's number plus `tailBlocks`.
 * - A block hash it never gave out is refused in anvil's words, as a node that does not hold
 *   the block refuses it (-32001 "Resource not found" for a read, "unknown block" for logs): an
 *   answer instead would tell the indexer's EIP-1898 probe that this node ignores block hashes,
 *   and every read would go by number, unlike on mainnet.
 *
 * - eth_getBlockReceipts answers a real block's receipts, renumbered, and none for an empty one.
 * - With `busyTail`, the blocks after the last real one are shaped like mainnet's instead of
 *   empty (busy-blocks.ts): other contracts' receipts under a matching receiptsRoot, and a bloom
 *   filled to the share set by `setTailFill` (none set until then).
 *
 * Synthesized blocks keep their real block's timestamp (a real chain's grow by 12 s a block):
 * the indexer never reads the time of an empty block, and the staker's views run at real ones.
 */
import { concatHex, type Hex, keccak256, numberToHex } from "viem";
import { type BusyBlock, busyBlock } from "./busy-blocks.ts";

type RpcCall = { jsonrpc?: string; id?: unknown; method: string; params?: unknown[] };
type RpcAnswer = { jsonrpc: "2.0"; id: unknown; result?: unknown; error?: unknown };
type Header = Record<string, unknown> & { number: Hex; hash: Hex; parentHash: Hex };

export type SparseChainOptions = {
  /** The last block whose number is kept (the staker's deployment block). */
  keepUpTo: bigint;
  /** Sparse numbers of the real blocks after keepUpTo, in order (see spreadBlocks). */
  placement: bigint[];
  /** Empty blocks after the last real one. */
  tailBlocks: number;
  /** The tail's blocks shaped like mainnet's, with a bloom ready at each of `fills`. */
  busyTail?: { fills: number[]; seed: string };
};

/** Reads whose parameter at this index is a block. */
const STATE_READS: Record<string, number> = {
  eth_call: 1,
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getStorageAt: 2,
  eth_getTransactionCount: 1,
  eth_getProof: 2,
  eth_createAccessList: 1,
  eth_estimateGas: 1,
  debug_traceCall: 1,
};
/** Answers naming blocks by number and hash, renumbered on the way back. */
const RENUMBERED = new Set([
  "eth_getTransactionReceipt",
  "eth_getTransactionByHash",
  "trace_transaction",
  "debug_traceTransaction",
]);
/** anvil's answers for a block hash it does not hold. */
const RESOURCE_NOT_FOUND = { code: -32001, message: "Resource not found" };
const UNKNOWN_BLOCK = { code: -32000, message: "unknown block" };
const EMPTY_TRIE = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";
const EMPTY_BLOOM = `0x${"00".repeat(256)}`;

/**
 * Places `count` real blocks over `span` block numbers after `start`: gaps drawn from a Pareto
 * distribution (most short, a few spanning much of the chain), scaled to fill the span.
 */
export function spreadBlocks(start: bigint, count: number, span: bigint, random: () => number) {
  const gaps = Array.from({ length: count }, () => 1 / (1 - random()) ** (1 / 1.2));
  const total = gaps.reduce((sum, gap) => sum + gap, 0);
  const placement: bigint[] = [];
  let at = start;
  for (const gap of gaps) {
    at += 1n + BigInt(Math.floor((gap / total) * Number(span - BigInt(count))));
    placement.push(at);
  }
  return placement;
}

export async function startSparseChain(upstream: string, options: SparseChainOptions) {
  const send = async (calls: RpcCall[]): Promise<RpcAnswer[]> => {
    const started = performance.now();
    const response = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(calls),
    });
    const answers = [await response.json()].flat() as RpcAnswer[];
    upstreamMs += performance.now() - started;
    return answers;
  };
  let upstreamMs = 0;
  let handlerMs = 0;
  let requests = 0;

  const realHead = BigInt(
    (await send([{ jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }]))[0]!.result as string,
  );
  const firstMoved = options.keepUpTo + 1n;
  if (BigInt(options.placement.length) !== realHead - options.keepUpTo) {
    throw new RangeError(
      `placement has ${options.placement.length} blocks; the devnet has ${realHead - options.keepUpTo} after ${options.keepUpTo}`,
    );
  }
  const sparseOf = (real: bigint) =>
    real < firstMoved ? real : options.placement[Number(real - firstMoved)]!;
  const sparseHead = sparseOf(realHead) + BigInt(options.tailBlocks);
  /** The real block at or before sparse number n. */
  const realAtOrBefore = (n: bigint): bigint => {
    if (n < firstMoved) return n;
    let low = 0;
    let high = options.placement.length - 1;
    if (n < options.placement[0]!) return options.keepUpTo;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (options.placement[middle]! <= n) low = middle;
      else high = middle - 1;
    }
    return firstMoved + BigInt(low);
  };
  const realFirstAtOrAfter = (n: bigint): bigint => {
    const before = realAtOrBefore(n);
    return sparseOf(before) === n ? before : before + 1n;
  };

  const headers = new Map<bigint, Header>();
  const realHeaders = await send(
    Array.from({ length: Number(realHead) + 1 }, (_, index) => ({
      jsonrpc: "2.0",
      id: index,
      method: "eth_getBlockByNumber",
      params: [numberToHex(index), false],
    })),
  );
  for (const answer of realHeaders) {
    const header = answer.result as Header;
    headers.set(BigInt(header.number), header);
  }
  const hashes = new Map<string, bigint>();
  const hashOf = (n: bigint): Hex => {
    const real = headers.get(realAtOrBefore(n))!;
    const hash = keccak256(concatHex([numberToHex(n, { size: 32 }), real.hash]));
    hashes.set(hash, n);
    return hash;
  };

  const busy = new Map<bigint, BusyBlock>();
  if (options.busyTail) {
    for (let n = sparseOf(realHead) + 1n; n <= sparseHead; n++) {
      busy.set(n, await busyBlock(n, options.busyTail.fills, options.busyTail.seed));
    }
  }
  let tailFill: number | undefined;

  const blockAt = (n: bigint) => {
    if (n < 0n || n > sparseHead) return null;
    const real = realAtOrBefore(n);
    const header = headers.get(real)!;
    const parentHash = n === 0n ? header.parentHash : hashOf(n - 1n);
    const renumbered = { ...header, number: numberToHex(n), hash: hashOf(n), parentHash };
    if (sparseOf(real) === n) return renumbered;
    const tail = busy.get(n);
    if (tail) {
      return {
        ...renumbered,
        transactions: tail.transactions,
        receiptsRoot: tail.receiptsRoot,
        logsBloom: (tailFill !== undefined && tail.blooms.get(tailFill)) || EMPTY_BLOOM,
        gasUsed: tail.receipts.at(-1)!.cumulativeGasUsed,
      };
    }
    return {
      ...renumbered,
      transactions: [],
      transactionsRoot: EMPTY_TRIE,
      receiptsRoot: EMPTY_TRIE,
      logsBloom: EMPTY_BLOOM,
      gasUsed: "0x0",
    };
  };
  const sparseNumber = (tag: unknown): bigint | undefined => {
    if (tag === undefined || tag === null) return sparseHead;
    if (typeof tag === "string") {
      if (/^0x[0-9a-f]+$/i.test(tag)) return BigInt(tag);
      if (tag === "earliest") return 0n;
      return sparseHead;
    }
    const { blockNumber, blockHash } = tag as { blockNumber?: string; blockHash?: string };
    if (blockNumber) return BigInt(blockNumber);
    return blockHash ? hashes.get(blockHash.toLowerCase()) : undefined;
  };
  /** Block numbers and hashes in an answer, real to sparse. */
  const renumber = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(renumber);
    if (!value || typeof value !== "object") return value;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = renumber(item);
    if (typeof out.blockNumber === "string" && "blockHash" in out) {
      const sparse = sparseOf(BigInt(out.blockNumber));
      out.blockNumber = numberToHex(sparse);
      out.blockHash = hashOf(sparse);
    } else if (typeof out.blockNumber === "number" && "blockHash" in out) {
      const sparse = sparseOf(BigInt(out.blockNumber));
      out.blockNumber = Number(sparse);
      out.blockHash = hashOf(sparse);
    }
    return out;
  };

  type Plan =
    | { answer: unknown }
    | { error: { code: number; message: string } }
    | { forward: RpcCall; fix: (result: unknown) => unknown };
  const plan = (call: RpcCall): Plan => {
    const params = call.params ?? [];
    switch (call.method) {
      case "eth_blockNumber":
        return { answer: numberToHex(sparseHead) };
      case "eth_getBlockByNumber":
      case "eth_getBlockByHash": {
        const n =
          call.method === "eth_getBlockByHash"
            ? hashes.get(String(params[0]).toLowerCase())
            : sparseNumber(params[0]);
        if (n === undefined) return { answer: null };
        const block = blockAt(n);
        if (!block || !params[1] || sparseOf(realAtOrBefore(n)) !== n) return { answer: block };
        return {
          forward: {
            ...call,
            method: "eth_getBlockByNumber",
            params: [numberToHex(realAtOrBefore(n)), true],
          },
          fix: (result) => ({ ...block, transactions: renumber((result as Header).transactions) }),
        };
      }
      case "eth_getLogs": {
        const filter = (params[0] ?? {}) as Record<string, unknown>;
        let from: bigint;
        let to: bigint;
        if (typeof filter.blockHash === "string") {
          const n = hashes.get(filter.blockHash.toLowerCase());
          if (n === undefined) return { error: UNKNOWN_BLOCK };
          from = n;
          to = n;
        } else {
          from = sparseNumber(filter.fromBlock ?? "latest")!;
          to = sparseNumber(filter.toBlock ?? "latest")!;
        }
        const realFrom = realFirstAtOrAfter(from);
        const realTo = realAtOrBefore(to < sparseHead ? to : sparseHead);
        if (realFrom > realTo) return { answer: [] };
        const { blockHash: _, ...rest } = filter;
        return {
          forward: {
            ...call,
            params: [{ ...rest, fromBlock: numberToHex(realFrom), toBlock: numberToHex(realTo) }],
          },
          fix: renumber,
        };
      }
    }
    if (call.method === "eth_getBlockReceipts") {
      const n =
        typeof params[0] === "string" && params[0].length === 66
          ? hashes.get(params[0].toLowerCase())
          : sparseNumber(params[0]);
      if (n === undefined || n > sparseHead) return { answer: null };
      const real = realAtOrBefore(n);
      if (sparseOf(real) === n) {
        return { forward: { ...call, params: [numberToHex(real)] }, fix: renumber };
      }
      const at = { blockNumber: numberToHex(n), blockHash: hashOf(n) };
      const receipts = (busy.get(n)?.receipts ?? []).map((receipt) => ({
        ...receipt,
        ...at,
        logs: (receipt.logs as object[]).map((log) => ({ ...log, ...at })),
      }));
      return { answer: receipts };
    }
    const blockIndex = STATE_READS[call.method];
    if (blockIndex !== undefined) {
      const n = sparseNumber(params[blockIndex]);
      if (n === undefined) return { error: RESOURCE_NOT_FOUND };
      const real = numberToHex(realAtOrBefore(n < sparseHead ? n : sparseHead));
      const moved = [...params];
      while (moved.length <= blockIndex) moved.push(undefined);
      moved[blockIndex] = real;
      return { forward: { ...call, params: moved }, fix: (result) => result };
    }
    return { forward: call, fix: RENUMBERED.has(call.method) ? renumber : (result) => result };
  };

  const answerAll = async (calls: RpcCall[]): Promise<RpcAnswer[]> => {
    const plans = calls.map(plan);
    const forwards = plans.flatMap((p, index) =>
      "forward" in p ? [{ ...p.forward, jsonrpc: "2.0", id: index }] : [],
    );
    const answers = forwards.length > 0 ? await send(forwards) : [];
    const byIndex = new Map(answers.map((answer) => [answer.id as number, answer]));
    return plans.map((p, index) => {
      const id = calls[index]!.id;
      if ("answer" in p) return { jsonrpc: "2.0", id, result: p.answer };
      if ("error" in p) return { jsonrpc: "2.0", id, error: p.error };
      const answer = byIndex.get(index);
      if (!answer) return { jsonrpc: "2.0", id, error: { code: -32603, message: "no answer" } };
      if (answer.error !== undefined) return { jsonrpc: "2.0", id, error: answer.error };
      return { jsonrpc: "2.0", id, result: p.fix(answer.result) };
    });
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120,
    async fetch(request) {
      const started = performance.now();
      requests++;
      const parsed = (await request.json()) as RpcCall | RpcCall[];
      const answers = await answerAll([parsed].flat());
      const response = Response.json(Array.isArray(parsed) ? answers : answers[0]);
      handlerMs += performance.now() - started;
      return response;
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    sparseOf,
    sparseHead,
    realHead,
    /** This node's own time per HTTP request (its handling, without the devnet's answers). */
    overhead: () => ({
      requests,
      ownMs: handlerMs - upstreamMs,
      ownMicrosPerRequest: requests > 0 ? ((handlerMs - upstreamMs) / requests) * 1_000 : 0,
    }),
    /** The busy tail's blooms: `fill` of their bits set, or none (undefined). */
    setTailFill(fill: number | undefined) {
      if (fill !== undefined && !options.busyTail?.fills.includes(fill)) {
        throw new RangeError(`no tail bloom was made at fill ${fill}`);
      }
      tailFill = fill;
    },
    resetOverhead() {
      requests = 0;
      handlerMs = 0;
      upstreamMs = 0;
    },
    stop: () => server.stop(true),
  };
}

export type SparseChain = Awaited<ReturnType<typeof startSparseChain>>;
