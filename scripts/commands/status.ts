import type { Command } from "commander";
import { createDatabase } from "../../db/client.ts";
import { createChainClient } from "../../indexer/chain/client.ts";
import { readChainTip } from "../../indexer/chain/finality.ts";
import { readFollowLease } from "../../indexer/follower/follow-lease.ts";
import { readOnlyQueues } from "../../indexer/queues/queues.ts";
import { createIndexerStore } from "../../indexer/store/index.ts";
import { config } from "../../lib/config.ts";
import { CHECK_TIMEOUT_MS, checkPostgres, checkRedis } from "../../lib/connection-checks.ts";
import { exitCodeFor, failureLine } from "../../lib/fail.ts";
import { openRedis } from "../../lib/redis.ts";
import { checkChainSettings, resolveChainSettings } from "../../ops/chain-settings.ts";
import { gatherStatus, renderStatus, statusFailures } from "../../ops/status.ts";

/** Adds `citizen-staking status` to `program`; its description is its help text. */
export function addStatusCommand(program: Command): void {
  program
    .command("status")
    .description(
      "each service's state, head, finality boundary, indexed block, lag, queues, failures and recorded read failures",
    )
    .action(async () => {
      const chain = await resolveChainSettings(config);
      const closers: Array<() => Promise<unknown>> = [];
      // Each service is checked on its own, once and bounded (the clients opened after a check
      // would wait for their service forever), so one that is away hides only what it holds.
      const store = (async () => {
        await checkPostgres(config.databaseUrl);
        const database = createDatabase(config.databaseUrl, { max: 3 });
        closers.push(database.close);
        return createIndexerStore(database.db);
      })();
      const client = createChainClient(chain.rpcUrl, {
        retryCount: 0,
        timeoutMs: CHECK_TIMEOUT_MS.rpc,
      });
      // The node must serve state where the indexer reads next: from the start block on a fresh
      // database, else above the checkpoint (the head, once caught up). Blocks below it are read
      // again only by backfill and reindex, which check for themselves; so a node that prunes
      // old state, as the demo's does, passes once the indexer is past it.
      const nextRead = async () => {
        const checkpoint = await store.then((opened) => opened.checkpoint()).catch(() => undefined);
        if (!checkpoint) return chain.startBlock();
        const head = await client.getBlockNumber();
        return checkpoint.indexedBlock < head ? checkpoint.indexedBlock + 1n : head;
      };
      const status = await gatherStatus({
        staker: chain.staker,
        chainId: chain.chainId,
        async node() {
          const chainId = await checkChainSettings({ ...chain, startBlock: nextRead });
          return { chainId, tip: await readChainTip(client, config.indexer.finalityDepth) };
        },
        store: () => store,
        async queues() {
          await checkRedis(config.redis);
          // Fails a read instead of waiting for Redis, should it go away after the check; the
          // failure is reported as the read's, so no 'error' event needs printing.
          const connection = openRedis(config.redis, "look");
          connection.on("error", () => {});
          const queues = readOnlyQueues(connection, config.queuePrefix);
          const followLease = () => readFollowLease(connection, config.queuePrefix);
          closers.push(async () => {
            await queues.close();
            connection.disconnect();
          });
          return { ...queues, followLease };
        },
      });
      const settings = {
        queuePrefix: config.queuePrefix,
        finalityDepth: config.indexer.finalityDepth,
      };
      for (const line of renderStatus(status, settings)) console.log(line);
      await Promise.all(closers.map((close) => close()));
      const failures = statusFailures(status);
      for (const error of failures) console.error(`error: ${failureLine(error)}`);
      if (failures.length > 0)
        process.exit(Math.max(...failures.map((error) => exitCodeFor(error))));
    });
}
