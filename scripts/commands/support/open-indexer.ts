import { createIndexer, type Indexer } from "../../../indexer/indexer.ts";
import { config } from "../../../lib/config.ts";
import { logger } from "../../../lib/log.ts";
import { listenForMetrics } from "../../../lib/metrics-server.ts";
import type { ChainSettings } from "../../../ops/chain-settings.ts";

const log = logger("cli");

/**
 * The indexer of a command. With `metrics` and METRICS_PORT set, it also serves /metrics until
 * it is closed; the port is bound first, so a taken one stops the command before it connects.
 */
export async function openIndexer(
  chain: ChainSettings,
  { readOnly = false, metrics = false }: { readOnly?: boolean; metrics?: boolean } = {},
): Promise<Indexer> {
  const endpoint =
    metrics && config.metrics.port !== undefined
      ? listenForMetrics(config.metrics.host, config.metrics.port)
      : undefined;
  const indexer = await createIndexer({
    rpcUrl: chain.rpcUrl,
    wsUrl: chain.wsUrl,
    staker: chain.staker,
    chainId: chain.chainId,
    databaseUrl: config.databaseUrl,
    redis: config.redis,
    queuePrefix: config.queuePrefix,
    ...config.indexer,
    readOnly,
  }).catch((error: unknown) => {
    endpoint?.stop();
    throw error;
  });
  if (!endpoint) return indexer;
  endpoint.serve(() => indexer.metrics.scrape());
  log.info({ host: config.metrics.host, port: endpoint.port }, "serving metrics at /metrics");
  return {
    ...indexer,
    async close() {
      endpoint.stop();
      await indexer.close();
    },
  };
}
