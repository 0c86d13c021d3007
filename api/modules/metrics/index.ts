/**
 * GET /metrics for Prometheus, without auth like the probes (keep it off the internet: it names
 * routes and pool sizes, nothing more). Requests are counted by route pattern, never by raw
 * path, so ids and addresses do not become label values.
 *
 * The chain gauges carry the indexer's names (indexer/metrics.ts) and are read at each scrape,
 * the checkpoint from Postgres and the head from the node the API already asks for /readyz, so
 * one alert on `citizen_staking_lag_blocks` works whether it scrapes the API or an indexer.
 */
import { max, sql } from "drizzle-orm";
import { Elysia } from "elysia";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Database } from "../../../db/client.ts";
import { indexerCheckpoints } from "../../../db/schema.ts";
import { withTimeout } from "../../../lib/with-timeout.ts";
import type { Reads } from "../../reads.ts";
import type { ResponseCache } from "../../response-cache.ts";

const PREFIX = "citizen_staking_";

/** A scrape that waits longer for the node than this leaves the head and lag as they were. */
export const CHAIN_READ_TIMEOUT_MS = 2_000;

export interface MetricsDependencies {
  db: Database;
  /** The hot reads' pool (api/reads.ts), beside postgres.js's. */
  reads: Pick<Reads, "max">;
  cache: ResponseCache;
  /** The node's head (the one /readyz asks); without it the head, lag and node_up are absent. */
  chainHead?: () => Promise<bigint>;
  /**
   * Which of the API processes sharing the port this is (api/processes.ts). Each process counts
   * its own requests, cache and pools (server.ts also serves them on METRICS_PORT + the slot), so
   * every series carries `api_process`: the processes' series stay apart when added up.
   */
  processSlot?: number;
}

export function metricsModule({ db, reads, cache, chainHead, processSlot }: MetricsDependencies) {
  const registry = new Registry();
  if (processSlot !== undefined) registry.setDefaultLabels({ api_process: String(processSlot) });
  const registers = [registry];
  const readChain = chainGauges({ db, chainHead, registers });
  // Requests are counted here, a Map increment each, and the counter is brought level at each
  // scrape (as the cache's lookups below): prom-client's inc hashes and checks the labels on
  // every call, about 1 µs of a request that costs the API 40-50.
  const answered = new Map<string, { labels: Record<string, string>; count: number }>();
  new Counter({
    name: `${PREFIX}api_requests_total`,
    help: "HTTP requests answered, by method, route pattern and status",
    labelNames: ["method", "route", "status"],
    registers,
    collect() {
      this.reset();
      for (const { labels, count } of answered.values()) this.inc(labels, count);
    },
  });
  const duration = new Histogram({
    name: `${PREFIX}api_request_duration_seconds`,
    help: "Time from request to response, by method and route pattern",
    labelNames: ["method", "route"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const poolMax = new Gauge({
    name: `${PREFIX}db_pool_max_connections`,
    help: "Connections each of this process's Postgres pools may open (DB_POOL_SIZE each): reads (the hot reads, Bun's client), main (postgres.js: tokens, LISTEN, the rest)",
    labelNames: ["pool"],
    registers,
  });
  poolMax.set({ pool: "reads" }, reads.max);
  poolMax.set({ pool: "main" }, db.$client.options.max);
  // Neither driver publishes its pool's state, so Postgres says what this process's
  // connections are doing (both pools name themselves by process: see db/client.ts).
  new Gauge({
    name: `${PREFIX}db_pool_connections`,
    help: "Open connections of this process's pool, by state as Postgres sees them (active, idle, ...)",
    labelNames: ["state"],
    registers,
    async collect() {
      this.reset();
      const rows = await db
        .execute<{ state: string | null; count: number }>(
          sql`select state, count(*)::int as count from pg_stat_activity
              where application_name = current_setting('application_name') group by state`,
        )
        .catch(() => []);
      for (const row of rows) this.set({ state: row.state ?? "unknown" }, row.count);
    },
  });

  new Gauge({
    name: `${PREFIX}api_cache_entries`,
    help: "Responses held in this instance's cache (RESPONSE_CACHE_ENTRIES bounds it; 0: off)",
    registers,
    collect() {
      this.set(cache.size);
    },
  });
  new Gauge({
    name: `${PREFIX}api_cache_max_entries`,
    help: "The cache's bound (RESPONSE_CACHE_ENTRIES)",
    registers,
  }).set(cache.maxEntries);
  new Counter({
    name: `${PREFIX}api_cache_lookups_total`,
    help: "Cache lookups, by result: hit (an entry was there) or miss",
    labelNames: ["result"],
    registers,
    collect() {
      // The cache counts; the counter is brought level with it at each scrape.
      this.reset();
      this.inc({ result: "hit" }, cache.lookups.hits);
      this.inc({ result: "miss" }, cache.lookups.misses);
    },
  });

  const started = new WeakMap<Request, number>();
  return new Elysia({ name: "metrics" })
    .onRequest(({ request }) => {
      started.set(request, performance.now());
    })
    .onAfterResponse({ as: "global" }, ({ request, route, set, responseValue }) => {
      const status = responseValue instanceof Response ? responseValue.status : set.status;
      // Unmatched paths share one label value: a scanner must not grow the series.
      const labels = { method: request.method, route: route || "unmatched" };
      const key = `${labels.method} ${labels.route} ${status ?? 200}`;
      const counted = answered.get(key);
      if (counted) counted.count++;
      else answered.set(key, { labels: { ...labels, status: String(status ?? 200) }, count: 1 });
      const begun = started.get(request);
      if (begun !== undefined) duration.observe(labels, (performance.now() - begun) / 1000);
    })
    .get(
      "/metrics",
      async () => {
        await readChain();
        return new Response(await registry.metrics(), {
          headers: { "content-type": Registry.PROMETHEUS_CONTENT_TYPE },
        });
      },
      { detail: { hide: true } },
    );
}

/**
 * The indexer's chain gauges, by the same names and rules: each part is read on its own, so a
 * node that does not answer sets node_up to 0 and leaves head and lag at their last values (a
 * zero head would read as a huge lag or none), and Postgres away leaves the checkpoint's.
 */
function chainGauges({
  db,
  chainHead,
  registers,
}: {
  db: Database;
  chainHead?: () => Promise<bigint>;
  registers: Registry[];
}) {
  const indexedBlock = new Gauge({
    name: `${PREFIX}indexed_block`,
    help: "The checkpoint: every table is complete up to this block",
    registers,
  });
  const finalizedBlock = new Gauge({
    name: `${PREFIX}finalized_block`,
    help: "The finality boundary the follower last saw (the checkpoint's finalized_block)",
    registers,
  });
  const node = chainHead
    ? {
        up: new Gauge({
          name: `${PREFIX}node_up`,
          help: `1 when the node answered this scrape's head read within ${CHAIN_READ_TIMEOUT_MS / 1000} s, else 0 (head and lag then keep their last values)`,
          registers,
        }),
        head: new Gauge({
          name: `${PREFIX}head_block`,
          help: "The node's latest block, as the API last saw it",
          registers,
        }),
        lag: new Gauge({
          name: `${PREFIX}lag_blocks`,
          help: "Blocks between the node's head and the checkpoint",
          registers,
        }),
      }
    : undefined;
  const checkpoint = db
    .select({
      indexedBlock: max(indexerCheckpoints.indexedBlock),
      finalizedBlock: max(indexerCheckpoints.finalizedBlock),
    })
    .from(indexerCheckpoints)
    .prepare("metrics_checkpoint");

  return async function readChain() {
    const [stored, head] = await Promise.allSettled([
      checkpoint.execute(),
      chainHead ? withTimeout(chainHead(), CHAIN_READ_TIMEOUT_MS) : undefined,
    ]);
    const row = stored.status === "fulfilled" ? stored.value[0] : undefined;
    const indexed = row?.indexedBlock ?? undefined;
    if (indexed !== undefined) indexedBlock.set(Number(indexed));
    if (row?.finalizedBlock != null) finalizedBlock.set(Number(row.finalizedBlock));
    if (!node) return;
    node.up.set(head.status === "fulfilled" ? 1 : 0);
    if (head.status !== "fulfilled" || head.value === undefined) return;
    node.head.set(Number(head.value));
    if (indexed !== undefined) node.lag.set(Number(head.value - indexed));
  };
}
