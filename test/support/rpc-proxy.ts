/**
 * An HTTP forwarder between the indexer and the node: every JSON-RPC POST is held `delayMs`
 * (a distant provider's round trip) and passed on to the node unchanged. On its way through it
 * counts what the indexer asks: HTTP requests, JSON-RPC calls by method (each element of a batch
 * array counts), eth_calls asked again with the same target, calldata and block, and the
 * contract calls inside the eth_calls (a deployless multicall carries many). The node's answers
 * are timed and weighed, never parsed, and passed back unchanged, along with requests a client
 * gave up on. WebSocket is not forwarded: the backfill does not subscribe.
 */
import { selectorOf, viewCallsOf } from "./view-calls.ts";

export type RpcTally = {
  httpRequests: number;
  /** Bytes of the request bodies and of the node's answers. */
  requestBytes: number;
  responseBytes: number;
  /** JSON-RPC calls, batch elements counted one by one. */
  calls: number;
  callsByMethod: Record<string, number>;
  ethCalls: number;
  /** eth_calls whose `to`, `data` and block were all asked before in this tally. */
  duplicateEthCalls: number;
  /** Contract calls the eth_calls carried: one for a plain call, each call of a multicall. */
  viewCalls: number;
  /** Contract calls with the same target, calldata and block as an earlier one. */
  duplicateViewCalls: number;
  /** By function name where known, else by selector. */
  viewCallsByFunction: Record<string, number>;
  duplicateViewCallsByFunction: Record<string, number>;
  /** eth_calls that were deployless multicalls. */
  multicallEthCalls: number;
  /** eth_calls to a contract directly (one read each), by function. */
  singleEthCallsByFunction: Record<string, number>;
  /** Bodies that were not JSON-RPC (forwarded all the same). */
  unreadableBodies: number;
  /**
   * HTTP requests whose client had gone (a timeout) before the node answered: the node did the
   * work all the same, and the client's retry asks it again.
   */
  abandonedRequests: number;
  /** The longest an HTTP request took from its arrival to the node's answer, delay included. */
  slowestRequestMs: number;
};

export type RpcProxy = {
  url: string;
  delayMs: number;
  /** What passed since the start or the last reset. */
  tally(): RpcTally;
  /** Starts a new tally (e.g. once the workers are up, so their start-up checks are left out). */
  reset(): void;
  stop(): Promise<void>;
};

type JsonRpcCall = { method?: unknown; params?: unknown };

function bump(counts: Record<string, number>, key: string) {
  counts[key] = (counts[key] ?? 0) + 1;
}

class Tally {
  httpRequests = 0;
  requestBytes = 0;
  responseBytes = 0;
  calls = 0;
  callsByMethod: Record<string, number> = {};
  ethCalls = 0;
  duplicateEthCalls = 0;
  viewCalls = 0;
  duplicateViewCalls = 0;
  viewCallsByFunction: Record<string, number> = {};
  duplicateViewCallsByFunction: Record<string, number> = {};
  multicallEthCalls = 0;
  singleEthCallsByFunction: Record<string, number> = {};
  unreadableBodies = 0;
  abandonedRequests = 0;
  slowestRequestMs = 0;
  // 64-bit hashes of the keys: a deployless multicall's calldata is tens of kB, and a
  // 100,000-event backfill makes tens of thousands of them.
  private readonly seen = new Set<number | bigint>();
  private readonly seenViews = new Set<number | bigint>();

  constructor(private readonly names: ReadonlyMap<string, string>) {}

  count(body: string) {
    this.httpRequests++;
    this.requestBytes += Buffer.byteLength(body);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      this.unreadableBodies++;
      return;
    }
    for (const call of Array.isArray(parsed) ? parsed : [parsed]) this.countCall(call);
  }

  private countCall(call: JsonRpcCall) {
    if (typeof call?.method !== "string") {
      this.unreadableBodies++;
      return;
    }
    this.calls++;
    bump(this.callsByMethod, call.method);
    if (call.method !== "eth_call") return;
    this.ethCalls++;
    const [request, block] = Array.isArray(call.params) ? call.params : [];
    const { to, data, input } = (request ?? {}) as { to?: string; data?: string; input?: string };
    const at = JSON.stringify(block ?? "latest");
    const key = Bun.hash(`${to?.toLowerCase() ?? ""}|${(data ?? input ?? "").toLowerCase()}|${at}`);
    if (this.seen.has(key)) this.duplicateEthCalls++;
    else this.seen.add(key);
    const views = viewCallsOf({ to, data: data ?? input });
    // Named by its own selector: a static-call batch is `run`, whatever calls it carries.
    if (to) bump(this.singleEthCallsByFunction, this.nameOf((data ?? input ?? "0x").toLowerCase()));
    else if (views.length > 0) this.multicallEthCalls++;
    for (const view of views) {
      this.viewCalls++;
      const name = this.nameOf(view.callData);
      bump(this.viewCallsByFunction, name);
      const viewKey = Bun.hash(`${view.target}|${view.callData}|${at}`);
      if (this.seenViews.has(viewKey)) {
        this.duplicateViewCalls++;
        bump(this.duplicateViewCallsByFunction, name);
      } else {
        this.seenViews.add(viewKey);
      }
    }
  }

  private nameOf(callData: string): string {
    const selector = selectorOf(callData);
    return this.names.get(selector) ?? selector;
  }

  snapshot(): RpcTally {
    return {
      httpRequests: this.httpRequests,
      requestBytes: this.requestBytes,
      responseBytes: this.responseBytes,
      calls: this.calls,
      callsByMethod: { ...this.callsByMethod },
      ethCalls: this.ethCalls,
      duplicateEthCalls: this.duplicateEthCalls,
      viewCalls: this.viewCalls,
      duplicateViewCalls: this.duplicateViewCalls,
      viewCallsByFunction: { ...this.viewCallsByFunction },
      duplicateViewCallsByFunction: { ...this.duplicateViewCallsByFunction },
      multicallEthCalls: this.multicallEthCalls,
      singleEthCallsByFunction: { ...this.singleEthCallsByFunction },
      unreadableBodies: this.unreadableBodies,
      abandonedRequests: this.abandonedRequests,
      slowestRequestMs: Math.round(this.slowestRequestMs),
    };
  }
}

export type RpcProxyOptions = {
  delayMs: number;
  /** Selector → function name, to name the contract calls counted. */
  functionNames?: ReadonlyMap<string, string>;
};

export function startRpcProxy(target: string, options: RpcProxyOptions): RpcProxy {
  const names = options.functionNames ?? new Map<string, string>();
  let tally = new Tally(names);
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // A batch of calls at old blocks can keep the node busy for seconds.
    idleTimeout: 120,
    async fetch(request) {
      if (request.method !== "POST") {
        return new Response("JSON-RPC over HTTP POST only", { status: 405 });
      }
      const arrived = performance.now();
      const body = await request.text();
      const counted = tally;
      const forwarded = (async () => {
        if (options.delayMs > 0) await Bun.sleep(options.delayMs);
        return fetch(target, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
      })();
      // Counted while the node works, not before the request leaves: the count (a multicall's
      // decoding) must not add to the time measured.
      counted.count(body);
      const answer = await forwarded;
      const payload = await answer.arrayBuffer();
      counted.responseBytes += payload.byteLength;
      counted.slowestRequestMs = Math.max(counted.slowestRequestMs, performance.now() - arrived);
      if (request.signal.aborted) counted.abandonedRequests++;
      return new Response(payload, {
        status: answer.status,
        headers: { "content-type": answer.headers.get("content-type") ?? "application/json" },
      });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    delayMs: options.delayMs,
    tally: () => tally.snapshot(),
    reset() {
      tally = new Tally(names);
    },
    async stop() {
      await server.stop(true);
    },
  };
}
