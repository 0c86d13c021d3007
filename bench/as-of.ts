/**
 * As-of answers against current ones, and the projection's chunk write time against the history
 * already stored, on a synthetic history generated in SQL (generate_series) into a scratch
 * database: --events events over --citizens citizens (10 rounds of stake, deposits, withdraw and
 * re-stakes by other wallets), 20 events a block.
 *
 * The history is written chunk by chunk as the indexer writes it (events, then
 * project_staked_citizens over the chunk, the checkpoint, staked_citizens for the touched
 * citizens), each chunk timed. At each --at point (stored events) the API's own statements
 * (api/modules/citizens/service.ts, no HTTP and no response cache: the uncached cost) answer
 * random existing pairs and wallets, now and as of random blocks, alternating for --rounds rounds.
 *
 * `bun bench/as-of.ts [--events 1000000] [--at 10000,100000,1000000] [--chunk 10000]
 *   [--requests 400] [--rounds 3]`
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { createCitizensService } from "../api/modules/citizens/service.ts";
import { openReads } from "../api/reads.ts";
import { createDatabase } from "../db/client.ts";
import { projectHistory, recompute } from "../indexer/store/projection.ts";
import { createScratchDatabase } from "../scratch/database.ts";
import { numberList, readFlags, runMain, wholeNumber } from "./support/flags.ts";
import { log, percentile, round, table } from "./support/report.ts";

const EVENTS_PER_BLOCK = 20;
const FIRST_BLOCK = 1000;
const STAKER = `0x${"5".repeat(40)}`;
const HASH = `0x${"a".repeat(64)}`;

/** The synthetic log in a staging table: round r of citizen i is event r * citizens + i. */
async function stage(
  db: ReturnType<typeof createDatabase>["db"],
  events: number,
  citizens: number,
) {
  const wallets = Math.max(1, Math.floor(citizens / 5));
  await db.execute(
    sql.raw(`
    create unlogged table staged as
    with raw as (
      select e, e % ${citizens} as citizen, e / ${citizens} as round from generate_series(0, ${events - 1}) e
    ), shaped as (
      select e, citizen, round, round % 10 as phase,
        round - round % 10 + case when round % 10 >= 7 then 7 when round % 10 >= 4 then 4 else 0 end as stake_round
      from raw
    )
    select e, ${FIRST_BLOCK} + e / ${EVENTS_PER_BLOCK} as block_number, (e % ${EVENTS_PER_BLOCK})::int as log_index,
      case when phase in (0, 4, 7) then 'Stake' when phase in (3, 6) then 'Withdraw' else 'Stake' end::staker_event_name as event,
      '0x' || lpad(to_hex(((citizen * 7 + stake_round) % ${wallets})::int), 40, '0') as account,
      case when phase in (0, 3, 4, 6, 7) then 's1_citizen' else 'bytes' end::asset_type as asset_type,
      (1 + citizen % 2)::smallint as citizen_season, (citizen / 2 + 1)::numeric as citizen_id,
      case when phase in (0, 3, 4, 6, 7) then (citizen / 2 + 1)::numeric
        else (50 + round % 7) * 1000000000000000000::numeric end as amount
    from shaped`),
  );
  await db.execute(sql.raw(`create index on staged (block_number)`));
  await db.execute(
    sql.raw(`
    insert into citizens (season, citizen_id, identity_id, item_cache_id, land_deed_id, name)
    select distinct citizen_season, citizen_id, citizen_id, citizen_id, citizen_id, 'Citizen #' || citizen_id
    from staged`),
  );
  await db.execute(
    sql.raw(`insert into indexer_checkpoints (staker, chain_id, indexed_block, scheduled_block)
      values ('${STAKER}', 1, ${FIRST_BLOCK - 1}, ${FIRST_BLOCK - 1})`),
  );
}

/** One chunk as the indexer writes it; answers its wall time in ms. */
async function writeChunk(db: ReturnType<typeof createDatabase>["db"], from: number, to: number) {
  const started = performance.now();
  await db.transaction(async (tx) => {
    await tx.execute(
      sql.raw(`
      insert into staker_events (block_number, log_index, block_hash, transaction_hash, event,
        account, asset, asset_type, amount_or_token_id, citizen_season, citizen_id)
      select block_number, log_index, '${HASH}', '${HASH}', event, account, account, asset_type,
        amount, citizen_season, citizen_id
      from staged where block_number between ${from} and ${to}`),
    );
    await tx.execute(
      sql.raw(`
      insert into citizen_stakes (block_number, log_index, season, citizen_id, staker,
        timelock_duration, timelock_multiplier, timelock_end_time, base_points)
      select block_number, log_index, citizen_season, citizen_id, account, 2592000, 100,
        1700000000 + block_number, 1000 + block_number % 500
      from staged
      where block_number between ${from} and ${to} and event = 'Stake' and asset_type = 's1_citizen'`),
    );
    const touched = await tx.execute<{ season: number; citizen_id: string }>(
      sql.raw(`
      select distinct citizen_season as season, citizen_id from staged
      where block_number between ${from} and ${to}`),
    );
    await projectHistory(tx, BigInt(from - 1), BigInt(to));
    await tx.execute(sql.raw(`update indexer_checkpoints set indexed_block = ${to}`));
    await recompute(
      tx,
      touched.map((row) => ({ season: row.season, citizenId: BigInt(row.citizen_id) })),
      BigInt(to),
    );
  });
  return performance.now() - started;
}

async function samples(db: ReturnType<typeof createDatabase>["db"], n: number, indexed: number) {
  const now = await db.execute<{ season: number; citizen_id: string; staker: string }>(
    sql.raw(`select season, citizen_id, staker from staked_citizens order by random() limit ${n}`),
  );
  // States that held at a random block inside them: the answer as of that block is a citizen.
  const past = await db.execute<{
    season: number;
    citizen_id: string;
    staker: string;
    block: string;
  }>(
    sql.raw(`select season, citizen_id, staker,
        valid_from + floor(random() * (coalesce(valid_to, ${indexed + 1}) - valid_from))::bigint as block
      from staked_citizens_history tablesample system (10) order by random() limit ${n}`),
  );
  const toSample = (
    row: { season: number; citizen_id: string; staker: string },
    block: bigint,
  ) => ({
    season: row.season,
    id: BigInt(row.citizen_id),
    address: row.staker,
    block,
  });
  return {
    now: now.map((row) => toSample(row, BigInt(indexed))),
    past: past.map((row) => toSample(row, BigInt(row.block))),
  };
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

async function compare(url: string, requests: number, rounds: number, indexed: number) {
  const { db, close: closeDatabase } = createDatabase(url, { max: 1 });
  const reads = openReads(url, { max: 1, connectTimeout: 10 });
  const close = () => Promise.all([reads.close(), closeDatabase()]);
  const service = createCitizensService(db, reads);
  const tokenHash = "0".repeat(64);
  const { now, past } = await samples(db, requests, indexed);
  const type = (season: number): "s1" | "s2" => (season === 1 ? "s1" : "s2");
  const calls = (path: Path, asOf: boolean) =>
    (asOf ? past : now).map((sample) => () => {
      if (path === "one") {
        return asOf
          ? service.findAt(tokenHash, type(sample.season), sample.id, sample.address, sample.block)
          : service.find(tokenHash, type(sample.season), sample.id, sample.address);
      }
      const request = {
        address: sample.address,
        sort: "id" as const,
        order: "asc" as const,
        limit: 50,
      };
      return asOf
        ? service.listAt(tokenHash, request, sample.block)
        : service.list(tokenHash, request);
    });
  const results: string[][] = [];
  for (const path of ["one", "listing"] as const) {
    // Warm the prepared statements and the plan caches, then alternate current and as-of.
    await time(calls(path, false).slice(0, 20));
    await time(calls(path, true).slice(0, 20));
    const medians = { now: [] as number[], asOf: [] as number[] };
    const p99 = { now: [] as number[], asOf: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      const current = await time(calls(path, false));
      const asOf = await time(calls(path, true));
      medians.now.push(percentile(current, 50));
      medians.asOf.push(percentile(asOf, 50));
      p99.now.push(percentile(current, 99));
      p99.asOf.push(percentile(asOf, 99));
    }
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        50,
      );
    const ratios = medians.asOf.map((value, i) => value / medians.now[i]!);
    results.push([
      path,
      `${round(median(medians.now), 3)}`,
      `${round(median(medians.asOf), 3)}`,
      `${round(median(p99.now), 3)} / ${round(median(p99.asOf), 3)}`,
      `${ratios.map((ratio) => round(ratio, 2)).join(", ")}`,
      median(ratios) <= 2 ? "met" : "missed",
    ]);
  }
  await close();
  return results;
}

runMain(async () => {
  const flags = readFlags({
    events: { type: "string", default: "1000000" },
    at: { type: "string", default: "10000,100000,1000000" },
    chunk: { type: "string", default: "10000" },
    requests: { type: "string", default: "400" },
    rounds: { type: "string", default: "3" },
  });
  const events = wholeNumber("events", flags.events);
  const at = numberList("at", flags.at).filter((point) => point <= events);
  const chunkBlocks = Math.max(1, Math.floor(wholeNumber("chunk", flags.chunk) / EVENTS_PER_BLOCK));
  const requests = wholeNumber("requests", flags.requests);
  const rounds = wholeNumber("rounds", flags.rounds);
  const database = await createScratchDatabase("bench_as_of");
  const { db, close } = createDatabase(database.url, { max: 1 });
  try {
    log(
      `staging ${events} synthetic events (load ${os
        .loadavg()
        .map((l) => round(l, 1))
        .join(" ")})`,
    );
    await stage(db, events, Math.max(10, Math.floor(events / 100)));
    const lastBlock = FIRST_BLOCK + Math.ceil(events / EVENTS_PER_BLOCK) - 1;
    const writes: string[][] = [];
    const answers: string[][] = [];
    let pending = [...at];
    let recent: number[] = [];
    for (let from = FIRST_BLOCK; from <= lastBlock; from += chunkBlocks) {
      const to = Math.min(lastBlock, from + chunkBlocks - 1);
      recent.push(await writeChunk(db, from, to));
      const stored = Math.min(events, (to - FIRST_BLOCK + 1) * EVENTS_PER_BLOCK);
      if (pending[0] !== undefined && stored >= pending[0]) {
        pending = pending.slice(1);
        const last = recent.slice(-3).sort((a, b) => a - b);
        const load = os.loadavg()[0]!;
        writes.push([`${stored}`, `${round(percentile(last, 50), 1)}`, `${round(load, 1)}`]);
        log(`${stored} events stored: chunk write ${round(percentile(last, 50), 1)} ms`);
        await db.execute(sql`analyze`);
        for (const row of await compare(database.url, requests, rounds, to)) {
          answers.push([`${stored}`, ...row, `${round(os.loadavg()[0]!, 1)}`]);
        }
        recent = [];
      }
    }
    log(
      `chunk writes (${chunkBlocks * EVENTS_PER_BLOCK} events each, median of the last 3):\n${table(
        [["stored events", "chunk write ms", "load 1m"], ...writes],
      )}`,
    );
    log(
      `answers, ms per call through the API's statements (no HTTP, no response cache), ${rounds} alternating rounds of ${requests}:\n${table(
        [
          [
            "stored events",
            "path",
            "now p50",
            "as-of p50",
            "p99 now / as-of",
            "as-of / now per round",
            "≤ 2×",
            "load 1m",
          ],
          ...answers,
        ],
      )}`,
    );
  } finally {
    await close();
    await database.drop();
  }
});
