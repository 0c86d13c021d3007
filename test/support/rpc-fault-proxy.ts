/**
 * An HTTP proxy in front of a JSON-RPC node that misbehaves on a share of requests the way real
 * providers do: 5xx errors, 429 with Retry-After, responses that never come in time, and bodies
 * cut off halfway. Seeded, so a failing run can be replayed. It can also answer chosen methods with
 * a JSON-RPC error of its own, as a node without that API (or a provider's) would.
 */
import { SeededRandom } from "../../devnet/random.ts";

const FAULTS = ["error", "rate-limit", "timeout", "truncated"] as const;
export type Fault = (typeof FAULTS)[number];

/** A JSON-RPC error object, as a node puts it in its answer. */
export type RpcErrorAnswer = { code: number; message: string; data?: string };

export function startRpcFaultProxy(options: {
  upstream: string;
  /** Share of requests that get a fault, 0..1. */
  faultRate: number;
  /** How long a "timeout" holds its answer; longer than the client's timeout. */
  holdMs: number;
  /** Refuse eth_getLogs over more blocks than this, as providers that cap the range do. */
  maxLogSpan?: number;
  /** Methods answered with this error instead of being forwarded. */
  refuseMethods?: Record<string, RpcErrorAnswer>;
  /** eth_calls that carry a state override answered with this error, as a node without them. */
  refuseStateOverride?: RpcErrorAnswer;
  /** Answer eth_getLogs without each log's blockTimestamp, as nodes before it existed do. */
  logsWithoutTimestamps?: boolean;
  seed?: string;
}) {
  const random = new SeededRandom(options.seed ?? "faults");
  const counts: Record<
    Fault | "passed" | "refusedLogRanges" | "refusedMethods" | "refusedStateOverrides",
    number
  > = {
    refusedLogRanges: 0,
    refusedMethods: 0,
    refusedStateOverrides: 0,
    error: 0,
    "rate-limit": 0,
    timeout: 0,
    truncated: 0,
    passed: 0,
  };
  let faultRate = options.faultRate;
  let refusedMethods = options.refuseMethods ?? {};
  let faultsServed = 0;
  /** Requests calling any of these methods wait, unanswered, until `releaseHeld`. */
  let holding: { methods: Set<string>; released: Promise<void>; release: () => void } | undefined;
  let held = 0;

  const send = (body: string) =>
    fetch(options.upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    }).then((response) => response.text());

  type RpcCall = {
    id: number;
    method: string;
    params?: unknown[];
  };
  const tooWide = (call: RpcCall) => {
    const filter = call.params?.[0] as { fromBlock?: string; toBlock?: string } | undefined;
    if (call.method !== "eth_getLogs" || options.maxLogSpan === undefined || !filter) return false;
    return Number(filter.toBlock) - Number(filter.fromBlock) + 1 > options.maxLogSpan;
  };
  const refusal = (call: RpcCall): RpcErrorAnswer | undefined => {
    if (tooWide(call)) {
      counts.refusedLogRanges++;
      return { code: -32005, message: `query exceeds max block range ${options.maxLogSpan}` };
    }
    if (options.refuseStateOverride && call.method === "eth_call" && call.params?.[2]) {
      counts.refusedStateOverrides++;
      return options.refuseStateOverride;
    }
    const refused = refusedMethods[call.method];
    if (refused) counts.refusedMethods++;
    return refused;
  };
  const withoutLogTimestamps = (answer: string) => {
    const parsed = JSON.parse(answer) as { result?: unknown } | { result?: unknown }[];
    for (const each of [parsed].flat()) {
      if (!Array.isArray(each.result)) continue;
      for (const log of each.result as Record<string, unknown>[]) delete log.blockTimestamp;
    }
    return JSON.stringify(parsed);
  };
  /** Forwards the calls nothing refuses and answers the rest with the configured error. */
  const forward = async (body: string) => {
    const parsed = JSON.parse(body) as RpcCall | RpcCall[];
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    if (options.logsWithoutTimestamps && calls.some((call) => call.method === "eth_getLogs")) {
      return withoutLogTimestamps(await forwardCalls(body, parsed, calls));
    }
    return forwardCalls(body, parsed, calls);
  };
  const forwardCalls = async (body: string, parsed: RpcCall | RpcCall[], calls: RpcCall[]) => {
    const refusals = new Map(calls.map((call) => [call, refusal(call)]));
    if (![...refusals.values()].some(Boolean)) return send(body);
    const allowed = calls.filter((call) => !refusals.get(call));
    const answers = allowed.length
      ? ([JSON.parse(await send(JSON.stringify(allowed)))].flat() as { id: number }[])
      : [];
    const byId = new Map(answers.map((answer) => [answer.id, answer]));
    const merged = calls.map((call) => {
      const error = refusals.get(call);
      return error ? { jsonrpc: "2.0", id: call.id, error } : byId.get(call.id);
    });
    return JSON.stringify(Array.isArray(parsed) ? merged : merged[0]);
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const body = await request.text();
      const hold = holding;
      if (hold && [...hold.methods].some((method) => body.includes(`"${method}"`))) {
        held++;
        await hold.released;
      }
      if (!random.chance(faultRate)) {
        counts.passed++;
        return new Response(await forward(body), {
          headers: { "content-type": "application/json" },
        });
      }
      // Faulty requests take the kinds in turn, so even a short run meets every one.
      const fault = FAULTS[faultsServed++ % FAULTS.length] as Fault;
      counts[fault]++;
      switch (fault) {
        case "error":
          return new Response("upstream exploded", { status: 502 });
        case "rate-limit":
          return new Response('{"error":"rate limited"}', {
            status: 429,
            headers: { "retry-after": "1" },
          });
        case "timeout":
          await Bun.sleep(options.holdMs);
          return new Response(await forward(body), {
            headers: { "content-type": "application/json" },
          });
        case "truncated": {
          const full = await forward(body);
          return new Response(full.slice(0, Math.floor(full.length / 2)), {
            headers: { "content-type": "application/json" },
          });
        }
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    counts,
    setFaultRate(rate: number) {
      faultRate = rate;
    },
    setRefusedMethods(refusals: Record<string, RpcErrorAnswer>) {
      refusedMethods = refusals;
    },
    /** From now on, requests calling any of `methods` hang until `releaseHeld()`. */
    holdMethods(methods: string[]) {
      const { promise, resolve } = Promise.withResolvers<void>();
      holding = { methods: new Set(methods), released: promise, release: resolve };
    },
    /** Answers every held request and stops holding. */
    releaseHeld() {
      holding?.release();
      holding = undefined;
    },
    /** Requests held so far (answered or not). */
    held: () => held,
    stop: () => server.stop(true),
  };
}
