/**
 * What the chunk path's missing-log check costs on one 2,000-block chunk (the default
 * CHUNK_SIZE), on a sparse and on a dense devnet chain: JSON-RPC calls by method, HTTP requests
 * and the fetch's time, through the bench's counting proxy at 0 and 50 ms a round trip. The
 * follower's bloom check (every header of the range) is measured on the same range for
 * comparison. Run: bun bench/missing-log-check.ts
 */
import { fetchStakerLogs } from "../indexer/chain/logs.ts";
import {
  checkStakerTransfersLogged,
  fetchStakerTransfers,
} from "../indexer/chain/transfer-check.ts";
import { fetchRange } from "../indexer/fetch/fetch-range.ts";
import { startRpcProxy } from "../test/support/rpc-proxy.ts";
import { openRun, startDevnet } from "./support/harness.ts";

const CHUNK = 2_000n;

/** A devnet whose scenario puts `transactionsPerBlock` staking transactions in each block. */
async function chain(label: string, events: number, transactionsPerBlock: number) {
  const devnet = await startDevnet(`missing-log-check-${label}`, 40);
  await devnet.scenario.run({ events, transactionsPerBlock });
  return devnet;
}

async function measure(label: string, events: number, transactionsPerBlock: number) {
  const devnet = await chain(label, events, transactionsPerBlock);
  const from = devnet.deployment.deployBlock;
  const head = await devnet.client.getBlockNumber();
  const to = from + CHUNK - 1n;
  if (head < to) await devnet.client.mine({ blocks: Number(to - head) });
  const logs = await devnet.client.getLogs({
    address: devnet.deployment.addresses.staker,
    fromBlock: from,
    toBlock: to,
  });
  const blocks = new Set(logs.map((log) => log.blockNumber)).size;
  console.log(`${label}: ${logs.length} staker logs in ${blocks} of ${CHUNK} blocks`);
  try {
    for (const delayMs of [0, 50]) {
      const proxy = startRpcProxy(devnet.node.rpcUrl, { delayMs });
      await using run = await openRun({
        label: "bench_missing_logs",
        rpcUrl: proxy.url,
        staker: devnet.deployment.addresses.staker,
        chunkSize: Number(CHUNK),
      });
      const { indexer } = run;
      // Once to read the citizens, so the runs below count the fetch and its check alone.
      await fetchRange(indexer.deps, { from, to });
      for (const dense of [false, true]) {
        proxy.reset();
        const started = performance.now();
        const write = await fetchRange(indexer.deps, { from, to, dense });
        const ms = Math.round(performance.now() - started);
        const { callsByMethod, httpRequests } = proxy.tally();
        console.log(
          `  ${delayMs} ms latency, ${dense ? "bloom check (every header)" : "transfer check"}: ${ms} ms, ${httpRequests} HTTP requests, ${JSON.stringify(callsByMethod)}, ${write.logCheck.askedAgain} asked again`,
        );
      }
      // The check alone: its eth_getLogs (every Transfer of the five tokens) and the matching,
      // given the staker's logs.
      const { deps } = indexer;
      const stakerLogs = await fetchStakerLogs(
        deps.logClient,
        deps.contracts.staker,
        from,
        to,
        deps.governor,
      );
      proxy.reset();
      const started = performance.now();
      const transfers = await fetchStakerTransfers(
        deps.logClient,
        deps.contracts,
        from,
        to,
        deps.governor,
      );
      const { askedAgain: harmless } = await checkStakerTransfersLogged(
        deps,
        deps.contracts,
        transfers,
        stakerLogs,
      );
      const ms = Math.round(performance.now() - started);
      console.log(
        `  ${delayMs} ms latency, the transfer check alone: ${ms} ms, ${proxy.tally().httpRequests} HTTP requests, ${transfers.length} Transfers matched (the staker's), ${harmless} asked again`,
      );
      await proxy.stop();
    }
  } finally {
    await devnet.node.stop();
  }
}

await measure("sparse", 20, 2);
// One staking transaction a block: a staker log in (nearly) every block of the chunk.
await measure("dense", 3_600, 1);
process.exit(0);
