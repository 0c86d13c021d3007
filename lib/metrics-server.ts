/**
 * The HTTP endpoint Prometheus scrapes in processes that serve nothing else (follow, worker,
 * backfill, reindex). It binds before the process connects anything, so a taken METRICS_PORT
 * stops the process at once like any other port in use.
 */
import { Registry } from "prom-client";
import { EXCLUSIVE_PORT, explainListenError } from "./listen.ts";

export interface MetricsEndpoint {
  /** The port bound (useful when 0 asked the kernel for one). */
  port: number;
  /** What /metrics answers; 503 until it is set. */
  serve(scrape: () => Promise<string>): void;
  stop(): void;
}

export function listenForMetrics(hostname: string, port: number): MetricsEndpoint {
  let scrape: (() => Promise<string>) | undefined;
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      hostname,
      port,
      ...EXCLUSIVE_PORT,
      async fetch(request) {
        if (new URL(request.url).pathname !== "/metrics") {
          return new Response("not found; metrics are at /metrics\n", { status: 404 });
        }
        if (!scrape) return new Response("starting\n", { status: 503 });
        return new Response(await scrape(), {
          headers: { "content-type": Registry.PROMETHEUS_CONTENT_TYPE },
        });
      },
    });
  } catch (error) {
    throw explainListenError(error, { hostname, port, setting: "METRICS_PORT" });
  }
  return {
    port: server.port ?? port,
    serve: (answer) => {
      scrape = answer;
    },
    stop: () => void server.stop(true),
  };
}
