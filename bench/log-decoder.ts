/**
 * What our staker log decoder saves against viem's decodeEventLog and parseEventLogs on a seeded
 * scenario chain's logs (docs/performance.md, "Staker log decoding"). Every decoder's events are
 * checked equal to ours first; the timed viem rows leave addresses checksummed: viem's floor.
 * Run: bun bench/log-decoder.ts [events]
 */
import { decodeEventLog, type Hex, type Log, parseEventLogs } from "viem";
import { mainnetStakerAbi } from "../contracts/generated/MainnetStaker.ts";
import { STAKER_EVENTS, STAKER_TOPICS } from "../contracts/staker-events.ts";
import { decodeStakerEvent } from "../indexer/chain/staker-log-decoder.ts";
import { startDevnet } from "./support/harness.ts";

const events = Number(Bun.argv[2] ?? 4_000);
const { node, client, deployment, scenario } = await startDevnet("log-decoder", 80);
let logs: Log[];
try {
  await scenario.run({ events });
  logs = (await client.getLogs({ address: deployment.addresses.staker, fromBlock: 0n })).filter(
    (log) => STAKER_TOPICS.includes(log.topics[0] as Hex),
  );
} finally {
  await node.stop();
}

type Decoded = { eventName: string; args?: unknown };
const lower = (value: unknown) => (typeof value === "string" ? value.toLowerCase() : value);
const lowered = ({ eventName, args }: Decoded) => ({
  eventName,
  args: Object.fromEntries(Object.entries(args as object).map(([key, v]) => [key, lower(v)])),
});
const abi = mainnetStakerAbi;
const viemDecode = (log: Log) =>
  decodeEventLog({ abi, topics: log.topics as [Hex], data: log.data, strict: true });
const viemParse = () => parseEventLogs({ abi, logs, eventName: [...STAKER_EVENTS], strict: true });
const decoders: [string, () => Decoded[]][] = [
  ["ours (decodeStakerEvent)", () => logs.map((log) => decodeStakerEvent(log.topics, log.data))],
  ["viem decodeEventLog", () => logs.map(viemDecode)],
  ["viem parseEventLogs", viemParse],
];

const expected = decoders[0]![1]();
for (const [name, decode] of decoders.slice(1)) {
  if (!Bun.deepEquals(decode().map(lowered), expected))
    throw new Error(`${name} decodes otherwise`);
}
const counts = Object.groupBy(expected, (event) => event.eventName);
const mix = STAKER_EVENTS.map((name) => `${counts[name]?.length ?? 0} ${name}`).join(", ");
console.log(`${logs.length} staker logs (${mix}); every decoder gives the same events`);
// Rounds take turns, so a burst of load on the shared machine lands on every decoder alike.
const rounds = decoders.map((): number[] => []);
for (let round = 0; round < 20; round++) {
  decoders.forEach(([, decode], index) => {
    const started = performance.now();
    decode();
    if (round >= 5) rounds[index]!.push(((performance.now() - started) * 1000) / logs.length);
  });
}
const medians = rounds.map((times) => times.sort((a, b) => a - b)[times.length >> 1]!);
decoders.forEach(([name], index) => {
  const perLog = medians[index]!;
  const rate = Math.round(1e6 / perLog).toLocaleString("en");
  const ratio = (perLog / medians[0]!).toFixed(1);
  console.log(`${name.padEnd(26)} ${perLog.toFixed(2)} µs/log  ${rate} logs/s  ${ratio}x ours`);
});
