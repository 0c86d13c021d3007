/**
 * A node shaped like a hosted provider, in front of a real one (anvil, or the counting proxy in
 * front of it): each HTTP request is held a latency with jitter; eth_getLogs is capped by block
 * span and by result count and refused in a chosen provider's words; calls above a request
 * budget get HTTP 429 with Retry-After, or a chosen provider's rate-limit answer; a share of
 * connections is closed without an answer; and it can play a full node, answering reads at
 * blocks older than its last 128 with a client's "state pruned" words. The wordings are
 * recorded in provider-wordings.ts, with their sources.
 *
 * The budget is a token bucket holding one second of calls (a JSON-RPC batch spends one per
 * call, as providers count them): a call that finds it empty is over budget, counted, and its
 * whole HTTP request answered as over budget, unforwarded.
 */
import { SeededRandom } from "../../devnet/random.ts";
import {
  PRUNED_STATE,
  RANGE_REFUSALS,
  RATE_LIMITS,
  type RefusedQuery,
} from "./provider-wordings.ts";

export type ProviderNodeOptions = {
  /** Every HTTP request waits this long (plus jitter) before it is forwarded. */
  latencyMs?: number;
  /** Up to this much more, uniformly. */
  jitterMs?: number;
  logs?: {
    maxSpan?: number;
    maxResults?: number;
    /** The provider whose words refuse (a `provider` of RANGE_REFUSALS). */
    wording: string;
  };
  budget?: {
    requestsPerSecond: number;
    retryAfterSeconds?: number;
    /**
     * The provider whose words refuse a call over budget (a `provider` of RATE_LIMITS); without
     * one, a bare 429 with Retry-After.
     */
    wording?: string;
  };
  /** Share of HTTP requests whose connection is closed with no answer (not forwarded). */
  resetRate?: number;
  /** Play a full node: state older than `keepBlocks` below the head is gone. */
  fullNode?: { keepBlocks?: number; client: string };
  seed?: string;
};

export type ProviderNodeStats = {
  httpRequests: number;
  calls: number;
  callsByMethod: Record<string, number>;
  /** Calls that arrived with the budget spent (answered 429). */
  callsOverBudget: number;
  /** The most calls that arrived within any one second. */
  peakCallsPerSecond: number;
  refusedLogRanges: number;
  /** Logs in eth_getLogs answers (what the answers cost in size, beside their count). */
  logsAnswered: number;
  /** State reads (eth_call, eth_getCode, …) by how they named their block (EIP-1898 or not). */
  stateReadsBy: { hash: number; number: number; tag: number };
  resetConnections: number;
  prunedReads: number;
};

type RpcCall = { jsonrpc?: string; id?: unknown; method: string; params?: unknown[] };
type RpcAnswer = { jsonrpc: "2.0"; id: unknown; result?: unknown; error?: unknown };

/** Reads whose last parameter is a block: refused at a pruned block. */
const STATE_READS: Record<string, number> = {
  eth_call: 1,
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getStorageAt: 2,
  eth_getTransactionCount: 1,
  eth_getProof: 2,
};

/** How a read names its block: by hash (EIP-1898's object), by number, or by a tag. */
function namedBy(block: unknown): "hash" | "number" | "tag" {
  if (block && typeof block === "object") {
    return "blockHash" in block ? "hash" : "number";
  }
  return typeof block === "string" && /^0x[0-9a-f]+$/i.test(block) ? "number" : "tag";
}

export function startProviderNode(upstream: string, options: ProviderNodeOptions) {
  const random = new SeededRandom(options.seed ?? "provider");
  const stats: ProviderNodeStats = {
    httpRequests: 0,
    calls: 0,
    callsByMethod: {},
    callsOverBudget: 0,
    peakCallsPerSecond: 0,
    refusedLogRanges: 0,
    logsAnswered: 0,
    stateReadsBy: { hash: 0, number: 0, tag: 0 },
    resetConnections: 0,
    prunedReads: 0,
  };
  const refusalWording = options.logs
    ? RANGE_REFUSALS.find((wording) => wording.provider === options.logs?.wording)
    : undefined;
  if (options.logs && !refusalWording)
    throw new RangeError(`no wording for ${options.logs.wording}`);
  const rateLimitWording = options.budget?.wording
    ? RATE_LIMITS.find((wording) => wording.provider === options.budget?.wording)
    : undefined;
  if (options.budget?.wording && !rateLimitWording) {
    throw new RangeError(`no wording for ${options.budget.wording}`);
  }
  const prunedWording = options.fullNode
    ? PRUNED_STATE.find((wording) => wording.client === options.fullNode?.client)
    : undefined;
  if (options.fullNode && !prunedWording) {
    throw new RangeError(`no wording for ${options.fullNode.client}`);
  }

  const rate = options.budget?.requestsPerSecond;
  let tokens = rate ?? 0;
  let refilledAt = performance.now();
  const spend = (calls: number) => {
    if (rate === undefined) return true;
    const now = performance.now();
    tokens = Math.min(rate, tokens + ((now - refilledAt) / 1_000) * rate);
    refilledAt = now;
    if (tokens < calls) return false;
    tokens -= calls;
    return true;
  };
  // Calls per whole second of arrival, for the peak.
  let second = 0;
  let inSecond = 0;
  const countArrival = (calls: number) => {
    const now = Math.floor(performance.now() / 1_000);
    if (now !== second) {
      second = now;
      inSecond = 0;
    }
    inSecond += calls;
    stats.peakCallsPerSecond = Math.max(stats.peakCallsPerSecond, inSecond);
  };

  const send = async (calls: RpcCall[]): Promise<RpcAnswer[]> => {
    const answer = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(calls),
    });
    return [await answer.json()].flat() as RpcAnswer[];
  };
  const head = async () => {
    const [answer] = await send([{ jsonrpc: "2.0", id: 0, method: "eth_blockNumber" }]);
    return BigInt(answer?.result as string);
  };
  const blockOf = async (tag: unknown): Promise<bigint | undefined> => {
    if (typeof tag === "string" && /^0x[0-9a-f]+$/i.test(tag)) return BigInt(tag);
    if (tag && typeof tag === "object") {
      const { blockNumber, blockHash } = tag as { blockNumber?: string; blockHash?: string };
      if (blockNumber) return BigInt(blockNumber);
      if (blockHash) {
        const [answer] = await send([
          { jsonrpc: "2.0", id: 0, method: "eth_getBlockByHash", params: [blockHash, false] },
        ]);
        const number = (answer?.result as { number?: string } | null)?.number;
        return number === undefined ? undefined : BigInt(number);
      }
    }
    return undefined;
  };
  const stateRootOf = async (block: bigint) => {
    const [answer] = await send([
      {
        jsonrpc: "2.0",
        id: 0,
        method: "eth_getBlockByNumber",
        params: [`0x${block.toString(16)}`, false],
      },
    ]);
    return (answer?.result as { stateRoot?: string } | null)?.stateRoot ?? `0x${"00".repeat(32)}`;
  };

  /** The answer a rule gives instead of the node's, before forwarding; undefined to forward. */
  const refuseBefore = async (call: RpcCall): Promise<RpcAnswer | undefined> => {
    if (call.method === "eth_getLogs" && options.logs?.maxSpan !== undefined && refusalWording) {
      const filter = call.params?.[0] as { fromBlock?: string; toBlock?: string } | undefined;
      const from = await blockOf(filter?.fromBlock);
      const to = await blockOf(filter?.toBlock);
      if (from !== undefined && to !== undefined && to - from + 1n > BigInt(options.logs.maxSpan)) {
        const limit = options.logs.maxSpan;
        return refusal(call, { from, to, limit, lastPassing: from + BigInt(limit) - 1n });
      }
    }
    const blockParameter = STATE_READS[call.method];
    if (blockParameter !== undefined && options.fullNode && prunedWording) {
      const block = await blockOf(call.params?.[blockParameter]);
      const keep = BigInt(options.fullNode.keepBlocks ?? 128);
      if (block !== undefined && block < (await head()) - keep) {
        stats.prunedReads++;
        const stateRoot = await stateRootOf(block);
        return {
          jsonrpc: "2.0",
          id: call.id,
          error: {
            code: prunedWording.code,
            message: prunedWording.message({ number: block, stateRoot }),
          },
        };
      }
    }
    return undefined;
  };
  const refusal = (call: RpcCall, query: RefusedQuery): RpcAnswer => {
    stats.refusedLogRanges++;
    const wording = refusalWording!;
    return {
      jsonrpc: "2.0",
      id: call.id,
      error: {
        code: wording.code,
        message: wording.message(query),
        ...(wording.data ? { data: wording.data(query) } : {}),
      },
    };
  };
  /** A log answer over the result cap becomes a refusal naming where the cap is reached. */
  const refuseAfter = async (call: RpcCall, answer: RpcAnswer): Promise<RpcAnswer> => {
    if (call.method !== "eth_getLogs" || !Array.isArray(answer.result)) return answer;
    const logs = answer.result as { blockNumber: string }[];
    const maxResults = options.logs?.maxResults;
    if (maxResults === undefined || logs.length <= maxResults) {
      stats.logsAnswered += logs.length;
      return answer;
    }
    const filter = call.params?.[0] as { fromBlock?: string; toBlock?: string };
    const from = (await blockOf(filter.fromBlock)) ?? 0n;
    const to = (await blockOf(filter.toBlock)) ?? from;
    const blockAtCap = BigInt(logs[maxResults]!.blockNumber);
    const lastPassing = blockAtCap > from ? blockAtCap - 1n : from;
    return refusal(call, { from, to, limit: maxResults, lastPassing });
  };

  const answerCalls = async (calls: RpcCall[]): Promise<RpcAnswer[]> => {
    const early = await Promise.all(calls.map(refuseBefore));
    const forwarded = calls.filter((_, index) => !early[index]);
    const answers = forwarded.length > 0 ? await send(forwarded) : [];
    const byId = new Map(answers.map((answer) => [JSON.stringify(answer.id), answer]));
    return Promise.all(
      calls.map(async (call, index) => {
        const refused = early[index];
        if (refused) return refused;
        const answer = byId.get(JSON.stringify(call.id));
        return answer
          ? refuseAfter(call, answer)
          : { jsonrpc: "2.0", id: call.id, error: { code: -32603, message: "no answer" } };
      }),
    );
  };

  const overBudget = () => {
    const retryAfterSeconds = options.budget?.retryAfterSeconds ?? 1;
    if (!rateLimitWording) {
      return Response.json(
        { jsonrpc: "2.0", id: null, error: { code: 429, message: "Too Many Requests" } },
        { status: 429, headers: { "retry-after": String(retryAfterSeconds) } },
      );
    }
    const { code, message, data, httpStatus } = rateLimitWording;
    return Response.json(
      {
        jsonrpc: "2.0",
        id: null,
        error: { code, message, ...(data ? { data: data(retryAfterSeconds) } : {}) },
      },
      { status: httpStatus },
    );
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120,
    async fetch(request) {
      if (request.method !== "POST") return new Response("JSON-RPC over POST", { status: 405 });
      stats.httpRequests++;
      const text = await request.text();
      let parsed: RpcCall | RpcCall[];
      try {
        parsed = JSON.parse(text);
      } catch {
        return Response.json({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32700, message: "parse error" },
        });
      }
      const calls = [parsed].flat();
      stats.calls += calls.length;
      for (const call of calls) {
        stats.callsByMethod[call.method] = (stats.callsByMethod[call.method] ?? 0) + 1;
        const blockParameter = STATE_READS[call.method];
        if (blockParameter !== undefined)
          stats.stateReadsBy[namedBy(call.params?.[blockParameter])]++;
      }
      countArrival(calls.length);
      if (!spend(calls.length)) {
        stats.callsOverBudget += calls.length;
        return overBudget();
      }
      if (options.resetRate && random.chance(options.resetRate)) {
        stats.resetConnections++;
        // A body that fails before its first byte: the connection closes with no answer.
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.error(new Error("connection reset by the provider node"));
            },
          }),
        );
      }
      const wait =
        (options.latencyMs ?? 0) + (options.jitterMs ? random.next() * options.jitterMs : 0);
      if (wait > 0) await Bun.sleep(wait);
      const answers = await answerCalls(calls);
      const refusedWithStatus =
        refusalWording?.httpStatus !== undefined &&
        answers.some(
          (answer) => (answer.error as { code?: number } | undefined)?.code === refusalWording.code,
        );
      return Response.json(Array.isArray(parsed) ? answers : answers[0], {
        status: refusedWithStatus ? refusalWording.httpStatus : 200,
      });
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    stats: (): ProviderNodeStats => ({
      ...stats,
      callsByMethod: { ...stats.callsByMethod },
      stateReadsBy: { ...stats.stateReadsBy },
    }),
    stop: () => server.stop(true),
  };
}

export type ProviderNode = ReturnType<typeof startProviderNode>;
