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
import { type RpcProxy, startRpcProxy } from "../test/support/rpc-proxy.ts";
import { openRun, startDevnet } from "./support/harness.ts";

const CHUNK = 2_000n;

/** `work` through `proxy`, counted from a fresh tally: its line of the printout. */
async function counted(proxy: RpcProxy, what: string, work: () => Promise<string>) {
  proxy.reset();
  const started = performance.now();
  const outcome = await work();
  const ms = Math.round(performance.now() - started);
  const { callsByMethod, httpRequests } = proxy.tally();
  const calls = JSON.stringify(callsByMethod);
  console.log(
    `  ${proxy.delayMs} ms latency, ${what}: ${ms} ms, ${httpRequests} HTTP requests, ${calls}, ${outcome}`,
  );
}

/** A devnet whose scenario puts `transactionsPerBlock` staking transactions in each block. */
async function measure(label: string, events: number, transactionsPerBlock: number) {
  const devnet = await startDevnet(`missing-log-check-${label}`, 40);
  await devnet.scenario.run({ events, transactionsPerBlock });
  const { deployBlock: from, addresses } = devnet.deployment;
  const to = from + CHUNK - 1n;
  const head = await devnet.client.getBlockNumber();
  if (head < to) await devnet.client.mine({ blocks: Number(to - head) });
  const logs = await devnet.client.getLogs({
    address: addresses.staker,
    fromBlock: from,
    toBlock: to,
  });
  const blocks = new Set(logs.map((log) => log.blockNumber)).size;
  console.log(`${label}: ${logs.length} staker logs in ${blocks} of ${CHUNK} blocks`);
  try {
    for (const delayMs of [0, 50]) {
      const proxy = startRpcProxy(devnet.node.rpcUrl, { delayMs });
      const settings = { rpcUrl: proxy.url, staker: addresses.staker, chunkSize: Number(CHUNK) };
      await using run = await openRun({ ...settings, label: "bench_missing_logs" });
      const { deps } = run.indexer;
      // Once to read the citizens, so the runs below count the fetch and its check alone.
      await fetchRange(deps, { from, to });
      for (const dense of [false, true]) {
        await counted(proxy, dense ? "bloom check (every header)" : "transfer check", async () => {
          const write = await fetchRange(deps, { from, to, dense });
          return `${write.logCheck.askedAgain} asked again`;
        });
      }
      // The check alone: its eth_getLogs (every Transfer of the five tokens) and the matching,
      // given the staker's logs.
      const { logClient, contracts, governor } = deps;
      const stakerLogs = await fetchStakerLogs(logClient, contracts.staker, from, to, governor);
      await counted(proxy, "the transfer check alone", async () => {
        const transfers = await fetchStakerTransfers(logClient, contracts, from, to, governor);
        const checked = await checkStakerTransfersLogged(deps, contracts, transfers, stakerLogs);
        return `${transfers.length} Transfers matched (the staker's), ${checked.askedAgain} asked again`;
      });
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
