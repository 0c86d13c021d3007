/**
 * The chunk writes of a backfill apart from its fetches: every slice fetched first (sliced by an
 * event budget as a worker slices them), then each written and timed, with Postgres timing the
 * SQL functions. Figures: docs/performance.md, "Against a fair limit".
 *
 * `bun bench/chunk-writes.ts [--events 20000] [--chunk-size 4] [--budget 2000]`
 */
import { createDatabase } from "../db/client.ts";
import { EventBudget } from "../indexer/chunk-workers/event-budget.ts";
import type { FetchedRange } from "../indexer/fetch/fetch-range.ts";
import { createIndexerStore } from "../indexer/store/index.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import { loadScenario, openRun } from "./support/harness.ts";
import { chunks } from "./support/limit.ts";
import { columns, log, print, round, startReport } from "./support/report.ts";

async function main() {
  const settings = readFlags({
    events: flag.number("20000", "2000"),
    "chunk-size": flag.number("4"),
    budget: flag.number("2000"),
  });
  const report = startReport("chunk-writes", settings);
  const { scenario, node } = await loadScenario({ seed: "bench", events: settings.events });
  const { addresses, chainId, deployBlock } = scenario.deployment;
  const { "chunk-size": chunkSize } = settings;
  try {
    const where = { rpcUrl: node.rpcUrl, staker: addresses.staker, chainId };
    await using run = await openRun({ ...where, label: "bench_chunk_writes", chunkSize });
    const { indexer } = run;
    await indexer.ensureCheckpoint(deployBlock);
    const name = new URL(run.databaseUrl).pathname.slice(1);
    await indexer.database.client.unsafe(`alter database "${name}" set track_functions = 'all'`);

    const budget = new EventBudget(settings.budget);
    const slices: FetchedRange[] = [];
    const fetchStarted = performance.now();
    for (const chunk of chunks(deployBlock, scenario.head, chunkSize)) {
      for (let from = chunk.from; from <= chunk.to; ) {
        const options = { maxEvents: budget.limit, logSpans: budget };
        const slice = await indexer.deps.fetch({ from, to: chunk.to }, options);
        slices.push(slice);
        from = slice.toBlock + 1n;
      }
    }
    const fetchSeconds = (performance.now() - fetchStarted) / 1000;
    log(`fetched ${slices.length} slices in ${round(fetchSeconds, 2)} s`);

    // Made after track_functions is set, so its sessions take it; three connections that live the
    // whole run, as a worker's do (and so do their plans).
    const database = createDatabase(run.databaseUrl, { max: 3 });
    const store = createIndexerStore(database.db);
    const timed: { slice: FetchedRange; ms: number }[] = [];
    const started = performance.now();
    for (const slice of slices) {
      const begun = performance.now();
      await store.writeRange(slice);
      timed.push({ slice, ms: performance.now() - begun });
    }
    const writeSeconds = (performance.now() - started) / 1000;
    // A session sends its function statistics at its end (or when idle a while): read them
    // once the writers' sessions have ended, from another.
    await database.close();
    const functions = await indexer.database.client<
      { funcname: string; calls: string; ms: number }[]
    >`select funcname, calls, total_time as ms from pg_stat_user_functions order by total_time desc`;

    print(
      columns(timed, {
        blocks: ({ slice }) => `${slice.fromBlock}-${slice.toBlock}`,
        events: ({ slice }) => slice.events.length,
        stakes: ({ slice }) => slice.stakes.length,
        "new citizens": ({ slice }) => slice.citizens.length,
        "write ms": ({ ms }) => round(ms, 0),
      }),
      columns(functions, {
        "SQL function": (row) => row.funcname,
        calls: (row) => row.calls,
        "ms in all": (row) => round(row.ms, 0),
      }),
    );
    const events = slices.reduce((sum, slice) => sum + slice.events.length, 0);
    report.finish();
    log(
      `${events} events: fetched in ${round(fetchSeconds, 2)} s, written in ${round(writeSeconds, 2)} s`,
    );
    await report.write({
      raw: {
        events,
        slices: timed.map(({ slice, ms }) => ({
          from: slice.fromBlock,
          to: slice.toBlock,
          events: slice.events.length,
          writeMs: round(ms, 1),
        })),
        functions: functions.map((row) => ({ ...row, ms: round(row.ms, 1) })),
      },
      ratios: { fetchSeconds: round(fetchSeconds, 3), writeSeconds: round(writeSeconds, 3) },
    });
  } finally {
    await node.stop();
  }
}

if (import.meta.main) runMain(main);
