/**
 * A worker's CPU per event as callgrind's instruction count, which other load does not move. Node
 * answers are recorded once and replayed with no socket: valgrind 3.19 does not know the
 * epoll_pwait2 Bun waits in. How, and the figures: docs/performance.md, "Worker instructions".
 *
 * `bun bench/worker-instructions.ts [--events 2000] [--chunk-size 16]` (minutes: callgrind runs
 * Bun about 50 times slower); `--replay <recording> <chunks> [passes]` replays its recording.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { drizzle } from "drizzle-orm/postgres-js";
import type { Address } from "viem";
import * as schema from "../db/schema.ts";
import { citizenStakes, citizens, stakerEvents } from "../db/schema.ts";
import { discoverContracts } from "../indexer/chain/contracts.ts";
import { LogRangeGovernor } from "../indexer/chain/logs.ts";
import { createNodeClients } from "../indexer/chain/node-clients.ts";
import { CitizenReadCache } from "../indexer/fetch/citizen-read-cache.ts";
import { fetchRange } from "../indexer/fetch/fetch-range.ts";
import { unnestRows } from "../indexer/store/unnest-rows.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import { loadScenario } from "./support/harness.ts";
import { chunks } from "./support/limit.ts";
import { log, RESULTS_DIR, round } from "./support/report.ts";

type Recording = {
  url: string;
  staker: Address;
  ranges: { from: string; to: string }[];
  /** Each request body without its ids → its answers in request order, their ids 0. */
  answers: Record<string, string[]>;
};

const keyOf = (body: string) => body.replace(/"id":\d+,?/g, "");

/**
 * A request's recorded answers as the node's text, a batch's ids 0, 1, ...: viem pairs a batch's
 * answers with its requests by order and checks no id, so the ids asked with need no rewriting.
 */
const answerText = (key: string, recorded: string[]) =>
  key.startsWith("[")
    ? `[${recorded.map((answer, i) => answer.replace('"id":0', `"id":${i}`)).join(",")}]`
    : recorded[0]!;

type Reply = { bytes: Uint8Array<ArrayBuffer>; headers: Record<string, string> };

/** The node's answers to every request, recorded (`record`) or played back without a socket. */
function nodeAnswers(mode: "record" | "replay", recording: Recording) {
  const realFetch = globalThis.fetch;
  // Each replayed answer made once, before the run, with anvil's headers: with its Content-Length,
  // capped-answers.ts passes it on untouched as it does the node's (not piece by piece).
  const replies = new Map<string, Reply>();
  if (mode === "replay") {
    for (const [key, recorded] of Object.entries(recording.answers)) {
      const bytes = new TextEncoder().encode(answerText(key, recorded));
      const length = String(bytes.byteLength);
      const headers = { "content-type": "application/json", "content-length": length };
      replies.set(key, { bytes, headers });
    }
  }
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const body = String(init?.body);
    if (mode === "replay") {
      const reply = replies.get(keyOf(body));
      if (!reply) throw new Error(`no recorded answer for ${body.slice(0, 200)}`);
      return new Response(reply.bytes, { headers: reply.headers });
    }
    const response = await realFetch(input, init);
    const text = await response.text();
    const [request, answer] = [JSON.parse(body), JSON.parse(text)];
    const inOrder = Array.isArray(request)
      ? request.map(({ id }: { id: number }) =>
          answer.find((each: { id: number }) => each.id === id),
        )
      : [answer];
    recording.answers[keyOf(body)] = inOrder.map((each: object) =>
      JSON.stringify({ ...each, id: 0 }),
    );
    return new Response(text, { status: response.status, headers: response.headers });
  }) as typeof fetch;
}

/** The worker's work on `ranges`: each fetched, its rows' statements built. */
async function index(recording: Recording, ranges: Recording["ranges"]) {
  const clients = createNodeClients(recording.url, { timeoutMs: 600_000 });
  const known = new Map<string, schema.CitizenRow>();
  const deps = {
    ...clients,
    contracts: await discoverContracts(clients.client, recording.staker),
    governor: new LogRangeGovernor(10_000),
    knownCitizens: async (keys: { season: number; citizenId: bigint }[]) =>
      keys.flatMap((key) => known.get(`${key.season}:${key.citizenId}`) ?? []),
    citizenReads: new CitizenReadCache(),
  };
  const db = drizzle.mock({ schema });
  let events = 0;
  for (const range of ranges) {
    const write = await fetchRange(deps, { from: BigInt(range.from), to: BigInt(range.to) });
    events += write.events.length;
    for (const row of write.citizens) known.set(`${row.season}:${row.citizenId}`, row);
    if (write.events.length)
      db.insert(stakerEvents).select(unnestRows(stakerEvents, write.events)).toSQL();
    if (write.stakes.length)
      db.insert(citizenStakes).select(unnestRows(citizenStakes, write.stakes)).toSQL();
    if (write.citizens.length)
      db.insert(citizens).select(unnestRows(citizens, write.citizens)).toSQL();
  }
  return events;
}

function countInstructions(file: string, count: number): number {
  const out = `${RESULTS_DIR}/callgrind-${process.pid}-${count}.out`;
  const args = ["--tool=callgrind", "--smc-check=all-non-file", `--callgrind-out-file=${out}`];
  const command = [process.execPath, import.meta.path, "--replay", file, String(count)];
  // On threads of their own, the JIT and the collector moved a count by 20% between runs.
  const mainThread = { BUN_JSC_useConcurrentJIT: "false", BUN_JSC_useConcurrentGC: "false" };
  const env = { ...process.env, ...mainThread };
  const run = Bun.spawnSync(["valgrind", ...args, ...command], { env });
  if (run.exitCode !== 0)
    throw new Error(`callgrind exited ${run.exitCode}: ${run.stderr.toString().slice(-800)}`);
  const totals = readFileSync(out, "utf8").match(/^totals: (\d+)/m)?.[1];
  rmSync(out);
  if (!totals) throw new Error(`${out} holds no totals`);
  return Number(totals);
}

async function main() {
  const flags = { events: flag.number("2000", "300"), "chunk-size": flag.number("16") };
  const settings = readFlags(flags);
  const spec = { seed: "backfill", events: settings.events };
  const { scenario, node } = await loadScenario(spec);
  const { deployBlock, addresses } = scenario.deployment;
  const blocks = chunks(deployBlock, scenario.head, settings["chunk-size"]);
  const ranges = blocks.map(({ from, to }) => ({ from: `${from}`, to: `${to}` }));
  const recording: Recording = { url: node.rpcUrl, staker: addresses.staker, ranges, answers: {} };
  nodeAnswers("record", recording);
  const events = await index(recording, ranges).finally(() => node.stop());
  const file = `${RESULTS_DIR}/node-answers-${spec.seed}-${spec.events}.json`;
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(file, JSON.stringify(recording));
  // Each count twice: how far apart two runs of the same replay land.
  const counts = (count: number) => [1, 2].map(() => countInstructions(file, count));
  const [none, all] = [counts(0), counts(ranges.length)];
  const perEvent = (a: number, b: number) => round((a - b) / events, 0);
  log(`${events} events in ${ranges.length} chunks of ${settings["chunk-size"]} blocks`);
  log(`instructions without chunks ${none.join(", ")}; with all ${all.join(", ")}`);
  const range = `${perEvent(Math.min(...all), Math.max(...none))}-${perEvent(Math.max(...all), Math.min(...none))}`;
  log(`per event: ${range}`);
}

if (Bun.argv[2] === "--replay") {
  // `--replay <file> <count> [passes]`: passes > 1 replays the chunks again in the same process
  // (fresh caches, warm code), for the cost of an event once the JIT has compiled the path.
  const [file, count, passes = "1"] = Bun.argv.slice(3) as [string, string, string?];
  const recording = JSON.parse(readFileSync(file, "utf8")) as Recording;
  nodeAnswers("replay", recording);
  for (let pass = 0; pass < Number(passes); pass++) {
    console.log(await index(recording, recording.ranges.slice(0, Number(count))));
  }
  process.exit(0);
} else {
  runMain(main);
}
