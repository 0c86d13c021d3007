/**
 * An HTTP proxy in front of a JSON-RPC node that misbehaves on a share of requests the way real
 * providers do: 5xx errors, 429 with Retry-After, responses that never come in time, and bodies
 * cut off halfway. Seeded, so a failing run can be replayed.
 */
import { SeededRandom } from "../../devnet/random.ts";

const FAULTS = ["error", "rate-limit", "timeout", "truncated"] as const;
export type Fault = (typeof FAULTS)[number];

export function startRpcFaultProxy(options: {
  upstream: string;
  /** Share of requests that get a fault, 0..1. */
  faultRate: number;
  /** How long a "timeout" holds its answer; longer than the client's timeout. */
  holdMs: number;
  seed?: string;
}) {
  const random = new SeededRandom(options.seed ?? "faults");
  const counts: Record<Fault | "passed", number> = {
    error: 0,
    "rate-limit": 0,
    timeout: 0,
    truncated: 0,
    passed: 0,
  };
  let faultRate = options.faultRate;
  let faultsServed = 0;

  const forward = (body: string) =>
    fetch(options.upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    }).then((response) => response.text());

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const body = await request.text();
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
    stop: () => server.stop(true),
  };
}
