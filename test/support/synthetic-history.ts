/**
 * A synthetic staking history generated in SQL (generate_series) and written chunk by chunk as
 * the indexer writes it, each chunk timed: the projection's write cost against the history
 * already stored. Used by bench/as-of.ts (which also answers as-of reads at each point) and the
 * tests.
 *
 * Round r of citizen i is event r * citizens + i: ten rounds per citizen of stake, deposits,
 * withdraw and re-stakes by other wallets, 20 events a block, so a chunk of `citizens` events or
 * more touches every citizen (the worst case: every touched citizen closes a state and opens one).
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { projectHistory, recompute } from "../../indexer/store/projection.ts";

export const EVENTS_PER_BLOCK = 20;
export const FIRST_BLOCK = 1000;
const STAKER = `0x${"5".repeat(40)}`;
const HASH = `0x${"a".repeat(64)}`;

/** The history's default width: a hundredth of its events, at least 10 citizens. */
export function defaultCitizens(events: number) {
  return Math.max(10, Math.floor(events / 100));
}

/** The synthetic log in a staging table, the citizens it names, and the checkpoint before it. */
export async function stage(db: Database, events: number, citizens: number) {
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

/** Blocks [from, to] of the staged log written as the indexer writes a chunk; its wall time, ms. */
export async function writeChunk(db: Database, from: number, to: number) {
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

/**
 * Vacuums the tables autovacuum would (dead rows over 50 + 20% of live ones, its defaults): for
 * a server with autovacuum off, where dead versions of every rewritten row would otherwise pile
 * up and every index scan and insert would wade through them (production's Postgres vacuums).
 */
export async function vacuumLikeAutovacuum(db: Database) {
  const due = await db.execute<{ relname: string }>(
    sql.raw(`select relname from pg_stat_user_tables where n_dead_tup > 50 + 0.2 * n_live_tup`),
  );
  for (const row of due) await db.execute(sql.raw(`vacuum "${row.relname}"`));
}

/** Whether the server vacuums by itself. */
export async function autovacuumIsOn(db: Database) {
  const [row] = await db.execute<{ autovacuum: string }>(sql.raw(`show autovacuum`));
  return row?.autovacuum === "on";
}

/** The chunk write time when `storedEvents` were stored: median of the last three chunks. */
export interface ChunkWritePoint {
  storedEvents: number;
  /** The chunk's last block: the indexed block at this point. */
  indexedBlock: number;
  chunkWriteMs: number;
  load1m: number;
}

/**
 * Stages `events` events over `citizens` citizens and writes them in chunks of `chunkEvents`;
 * at each of `at` (stored events) reports the chunk write time and hands the point to `onPoint`
 * (which may read the database) before writing on.
 */
export async function writeHistory(
  db: Database,
  options: {
    events: number;
    citizens: number;
    chunkEvents: number;
    at: number[];
    onPoint?: (point: ChunkWritePoint) => Promise<void>;
    /** Vacuum between chunks, untimed, as autovacuum would (for a server with it off). */
    vacuum?: boolean;
  },
): Promise<ChunkWritePoint[]> {
  const { events, citizens } = options;
  const chunkBlocks = Math.max(1, Math.floor(options.chunkEvents / EVENTS_PER_BLOCK));
  await stage(db, events, citizens);
  const lastBlock = FIRST_BLOCK + Math.ceil(events / EVENTS_PER_BLOCK) - 1;
  const points: ChunkWritePoint[] = [];
  let pending = options.at.filter((point) => point <= events).sort((a, b) => a - b);
  let recent: number[] = [];
  for (let from = FIRST_BLOCK; from <= lastBlock && pending.length > 0; from += chunkBlocks) {
    const to = Math.min(lastBlock, from + chunkBlocks - 1);
    recent.push(await writeChunk(db, from, to));
    if (options.vacuum) await vacuumLikeAutovacuum(db);
    const stored = Math.min(events, (to - FIRST_BLOCK + 1) * EVENTS_PER_BLOCK);
    if (pending[0] !== undefined && stored >= pending[0]) {
      pending = pending.slice(1);
      const point = {
        storedEvents: stored,
        indexedBlock: to,
        chunkWriteMs: tenths(median(recent.slice(-3))),
        load1m: tenths(os.loadavg()[0]!),
      };
      points.push(point);
      await options.onPoint?.(point);
      recent = [];
    }
  }
  return points;
}

/** The middle value (the lower of the two middle ones for an even count), as the bench reports. */
function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.ceil(sorted.length / 2) - 1]!;
}

function tenths(value: number): number {
  return Math.round(value * 10) / 10;
}
