/**
 * As-of answers against current ones, and the chunk write time against the history stored, on a
 * synthetic history (test/support/synthetic-history.ts). How, and the figures:
 * docs/performance.md, "As of". --vacuum is for a server with autovacuum off, where the dead
 * versions of rewritten rows otherwise pile up with the history.
 *
 * `bun bench/as-of.ts [--events 1000000] [--citizens events/100] [--at 10000,100000,1000000]
 *   [--chunk 10000] [--requests 400] [--rounds 3] [--vacuum]`
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { createCitizensService } from "../api/modules/citizens/service.ts";
import { openReads } from "../api/reads.ts";
import { createDatabase } from "../db/client.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import {
  autovacuumIsOn,
  type ChunkWritePoint,
  defaultCitizens,
  writeHistory,
} from "../test/support/synthetic-history.ts";
import { flag, readFlags, runMain } from "./support/flags.ts";
import { chunkWriteTable, log, median, percentile, round, table } from "./support/report.ts";

type SampleRow = { season: number; citizen_id: string; staker: string; block: string };

async function samples(db: ReturnType<typeof createDatabase>["db"], n: number, indexed: number) {
  const now = await db.execute<SampleRow>(
    sql.raw(`select season, citizen_id, staker, ${indexed} as block
      from staked_citizens order by random() limit ${n}`),
  );
  // States that held at a random block inside them: the answer as of that block is a citizen.
  const past = await db.execute<SampleRow>(
    sql.raw(`select season, citizen_id, staker,
        valid_from + floor(random() * (coalesce(valid_to, ${indexed + 1}) - valid_from))::bigint as block
      from staked_citizens_history tablesample system (10) order by random() limit ${n}`),
  );
  const toSample = (row: SampleRow) => ({
    season: row.season,
    id: BigInt(row.citizen_id),
    address: row.staker,
    block: BigInt(row.block),
  });
  return { now: now.map(toSample), past: past.map(toSample) };
}

type Path = "one" | "listing";

/** Per-call latencies (ms) of `calls` sequential calls. */
async function time(calls: Array<() => Promise<unknown>>) {
  const latencies: number[] = [];
  for (const call of calls) {
    const started = performance.now();
    await call();
    latencies.push(performance.now() - started);
  }
  return latencies.sort((a, b) => a - b);
}

/** Each path's p50 and p99 now and as of, alternating for `rounds` rounds: a table row each. */
async function compare(url: string, requests: number, rounds: number, indexed: number) {
  const { db, close: closeDatabase } = createDatabase(url, { max: 1 });
  const reads = openReads(url, { max: 1, connectTimeout: 10 });
  const service = createCitizensService(db, reads);
  const tokenHash = "0".repeat(64);
  const { now, past } = await samples(db, requests, indexed);
  const calls = (path: Path, asOf: boolean) =>
    (asOf ? past : now).map(({ season, id, address, block }) => () => {
      const type = season === 1 ? "s1" : "s2";
      const request = { address, sort: "id", order: "asc", limit: 50 } as const;
      if (path === "listing") {
        return asOf ? service.listAt(tokenHash, request, block) : service.list(tokenHash, request);
      }
      return asOf
        ? service.findAt(tokenHash, type, `${id}`, address, block)
        : service.find(tokenHash, type, `${id}`, address);
    });
  const results: string[][] = [];
  for (const path of ["one", "listing"] as const) {
    // Warm the prepared statements and the plan caches, then alternate current and as-of.
    await time(calls(path, false).slice(0, 20));
    await time(calls(path, true).slice(0, 20));
    const timed: { now: number[]; asOf: number[] }[] = [];
    for (let r = 0; r < rounds; r++) {
      timed.push({ now: await time(calls(path, false)), asOf: await time(calls(path, true)) });
    }
    // Each round's latencies come sorted.
    const mid = (rank: number, of: "now" | "asOf") =>
      median(timed.map((round) => percentile(round[of], rank)));
    const ratios = timed.map((round) => percentile(round.asOf, 50) / percentile(round.now, 50));
    results.push([
      path,
      `${round(mid(50, "now"), 3)}`,
      `${round(mid(50, "asOf"), 3)}`,
      `${round(mid(99, "now"), 3)} / ${round(mid(99, "asOf"), 3)}`,
      `${ratios.map((ratio) => round(ratio, 2)).join(", ")}`,
      median(ratios) <= 2 ? "met" : "missed",
    ]);
  }
  await Promise.all([reads.close(), closeDatabase()]);
  return results;
}

runMain(async () => {
  const flags = readFlags({
    events: flag.number("1000000"),
    at: flag.numbers("10000,100000,1000000"),
    chunk: flag.number("10000"),
    citizens: flag.number(undefined),
    vacuum: flag.boolean(),
    requests: flag.number("400"),
    rounds: flag.number("3"),
  });
  const { events, requests, rounds, chunk: chunkEvents, vacuum } = flags;
  const at = flags.at.filter((point) => point <= events);
  const citizens = flags.citizens ?? defaultCitizens(events);
  log(`staging ${events} synthetic events (load ${round(os.loadavg()[0]!, 1)})`);
  const answers: string[][] = [];
  const database = await createScratchDatabase("bench_as_of");
  const { db, close } = createDatabase(database.url, { max: 1 });
  const onPoint = async (point: ChunkWritePoint) => {
    log(`  ${point.storedEvents} events stored: chunk write ${point.chunkWriteMs} ms`);
    await db.execute(sql`analyze`);
    for (const row of await compare(database.url, requests, rounds, point.indexedBlock)) {
      answers.push([`${point.storedEvents}`, ...row, `${round(os.loadavg()[0]!, 1)}`]);
    }
  };
  try {
    const vacuumed = vacuum ? "vacuuming between chunks (untimed)" : "no vacuum between chunks";
    log(`autovacuum ${(await autovacuumIsOn(db)) ? "on" : "off"} on this server; ${vacuumed}`);
    const options = { events, citizens, chunkEvents, at, vacuum, onPoint };
    log(chunkWriteTable(await writeHistory(db, options), chunkEvents));
  } finally {
    await close();
    await database.drop();
  }
  const header = ["stored events", "path", "now p50", "as-of p50", "p99 now / as-of"];
  header.push("as-of / now per round", "≤ 2×", "load 1m");
  const title = `answers, ms per call through the API's statements (no HTTP, no response cache), ${rounds} alternating rounds of ${requests}`;
  log(`${title}:\n${table([header, ...answers])}`);
});
