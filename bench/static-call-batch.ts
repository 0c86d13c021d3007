/**
 * A chunk's bulk reads of every citizen staked at a scenario chain's head, through the static-call
 * reader and through the multicall it replaced, alternated: median wall ms, CPU ms, eth_calls.
 * `bun bench/static-call-batch.ts [events = 10000] [rounds = 7]`
 */
import { mainnetStakerAbi as abi } from "../contracts/generated/MainnetStaker.ts";
import { type BlockReads, createBlockReads } from "../indexer/chain/block-reads.ts";
import { readCitizenComponents } from "../indexer/chain/citizen-components.ts";
import { createChainClient } from "../indexer/chain/client.ts";
import { readStakes, type StakeAtBlock } from "../indexer/chain/stake-reads.ts";
import { startScenarioChain } from "../test/support/scenario-chain.ts";
import { cpuSecondsOf } from "./support/processes.ts";

const [events = 10_000, rounds = 7] = Bun.argv.slice(2).map(Number);
const cpuOf = async (pid: number) => (await cpuSecondsOf(pid)) * 1000;
const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!.toFixed(0);
const chain = await startScenarioChain({ seed: "static-call-batch", events });
let ethCalls = 0;
const client = createChainClient(chain.node.rpcUrl, {
  observer: { call: (method) => void (method === "eth_call" && ethCalls++), httpResponse() {} },
});
const { addresses: contracts } = chain.deployment;
const at = { blockNumber: chain.progress.block };
const staker = { address: contracts.staker, abi } as const;
const logs = await chain.client.getContractEvents({ ...staker, eventName: "Stake", fromBlock: 0n });
const stakes: StakeAtBlock[] = [];
for (const wallet of new Set(logs.map((log) => log.args.staker!))) {
  const read = { ...staker, functionName: "getStakerPositions", args: [wallet], ...at } as const;
  const { stakedS1Citizens: s1, stakedS2Citizens: s2 } = await chain.client.readContract(read);
  for (const { citizenId } of s1) stakes.push({ season: 1, citizenId, staker: wallet, ...at });
  for (const { citizenId } of s2) stakes.push({ season: 2, citizenId, staker: wallet, ...at });
}
const anvil = chain.node.process.pid;
const now = async () => [performance.now(), await cpuOf(process.pid), await cpuOf(anvil), ethCalls];
const paths: Record<string, () => BlockReads> = {
  "static-call batch": () => createBlockReads(client),
  "viem multicall": () => ({ read: (call) => client.readContract(call as never) as never }),
};
const runs = Object.fromEntries(Object.keys(paths).map((name) => [name, [] as number[][]]));
// Round 0 warms the JIT and the node's caches up; the order alternates.
for (let round = 0; round <= rounds; round++) {
  for (const name of round % 2 ? Object.keys(paths) : Object.keys(paths).reverse()) {
    const before = await now();
    const components = await readCitizenComponents(paths[name]!(), contracts, stakes, at);
    const withVaults = stakes.map((stake, i) => ({ ...stake, ...components[i] }));
    await readStakes(paths[name]!(), contracts, withVaults);
    if (round > 0) runs[name]!.push((await now()).map((value, k) => value - before[k]!));
  }
}
await chain.stop();
console.log(`${stakes.length} citizens staked at block ${at.blockNumber}; medians of ${rounds}:`);
for (const [name, figures] of Object.entries(runs)) {
  const [wall, cpu, node, calls] = [0, 1, 2, 3].map((k) => median(figures.map((f) => f[k]!)));
  console.log(`${name}: wall ${wall} ms, cpu ${cpu} ms, anvil ${node} ms, ${calls} eth_calls`);
}
