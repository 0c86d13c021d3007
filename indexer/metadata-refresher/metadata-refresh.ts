/**
 * Keeps citizens' names and images fresh with no operator. A metadata contract can change what
 * tokenURI answers without any event (a new renderer, a mended or broken token), so the follower
 * reads tokenURIs again at the head: every interval one page (one batched eth_call of 50),
 * cycling through every citizen, and recorded read failures first, each retried later after
 * every failed attempt. What changed is written and moves the data version (ETags, caches). A
 * tokenURI that stops reading keeps the citizen's last readable name and image (a citizen that
 * left its contract may revert there while its history stays valid), and is recorded as a read
 * failure, so `read-failures`, `status` and the metrics show what is served stale.
 *
 * Rounds are jobs of a BullMQ job scheduler, so any number of follower processes make one round
 * per interval between them, not one each; where the cycle stands is kept in Redis.
 */
import { type Job, Queue, type Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { PublicClient } from "viem";
import type { ReadFailureRow } from "../../db/schema.ts";
import { errorSummary } from "../../lib/log.ts";
import type { Season } from "../../lib/vocabulary.ts";
import { readTokenUris } from "../chain/citizen-reads.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import { NodeBehind } from "../chain/node-behind.ts";
import { metadataOf } from "../project/citizen-row.ts";
import { createJobWorker } from "../queues/job-worker.ts";
import type {
  CitizenKeyRow,
  DueReadFailure,
  IndexerStore,
  MetadataUpdate,
  PostponedReadFailure,
  StoredMetadata,
} from "../store/index.ts";

export const METADATA_QUEUE = "metadata";
const SCHEDULER_ID = "metadata-refresh";
/** One batched eth_call's worth of tokenURIs (static-call-batch.ts reads 50 to a call). */
export const METADATA_PAGE = 50;
/**
 * Recorded failures a round reads again at most: a tokenURI still failing is read once more
 * alone (to record its own words), so this bounds a round's eth_calls beside its one batch.
 */
const DUE_FAILURES_PER_ROUND = 5;
/** Citizens the operator's full refresh reads and compares at a time. */
const FULL_REFRESH_PAGE = 1_000;
/**
 * A failure that fails again is retried 2×, 4×, 8×, … the interval later (at least a second),
 * up to an hour.
 */
const MAX_RETRY_DELAY_MS = 60 * 60_000;
/** How often each process puts the scheduler back (a Redis that lost its keys lost it). */
const SCHEDULER_REFRESH_MS = 10_000;

export interface MetadataRefresherDeps {
  client: PublicClient;
  contracts: StakerContracts;
  store: IndexerStore;
  /** For the scheduler's queue and worker, and the cycle's position. */
  redis: Redis;
  queuePrefix: string;
  log: Logger;
  /** Time between rounds; 0 leaves scheduled rounds off (the commands still work). */
  intervalMs: number;
  pageSize?: number;
}

export interface RoundResult {
  read: number;
  changed: number;
  /** Recorded failures read again that still fail. */
  stillFailing: number;
  /** TokenURIs that read before and not now: recorded, their name and image kept. */
  stoppedReading: number;
}

export function createMetadataRefresher(deps: MetadataRefresherDeps) {
  const { client, contracts, store, redis, log } = deps;
  const pageSize = deps.pageSize ?? METADATA_PAGE;
  const cursorKey = `${deps.queuePrefix}:${METADATA_QUEUE}:cycle-after`;
  let queue: Queue | undefined;
  let worker: Worker | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;

  /** What these citizens' tokenURIs say at `block`, many to an eth_call. */
  async function metadataAt(citizens: readonly CitizenKeyRow[], block: bigint) {
    const keys = citizens.map(({ season, citizenId }) => ({ season: season as Season, citizenId }));
    return (await readTokenUris(client, contracts, keys, block)).map(metadataOf);
  }

  /**
   * The update for a citizen whose tokenURI read at the head, or none when nothing changed; a
   * recorded failure that now reads is cleared.
   */
  function changeOf(
    row: StoredMetadata,
    metadata: { name?: string; image?: string },
  ): MetadataUpdate | undefined {
    const name = metadata.name ?? null;
    const image = metadata.image ?? null;
    if (name === row.name && image === row.image && !row.failing) return undefined;
    return { season: row.season, citizenId: row.citizenId, name, image };
  }

  const retryDelay = (attempts: number) =>
    Math.min(Math.max(deps.intervalMs, 1_000) * 2 ** attempts, MAX_RETRY_DELAY_MS);

  /** A tokenURI that did not read at `head`, to record; the stored name and image stay. */
  const failureOf = (row: CitizenKeyRow, reason: string, head: bigint): ReadFailureRow => ({
    season: row.season,
    citizenId: row.citizenId,
    read: "tokenURI",
    reason,
    blockNumber: head,
    retryAt: new Date(Date.now() + retryDelay(0)),
  });

  /** Where the cycle stands: the last citizen of the previous page, or its start. */
  async function cycleAfter(): Promise<CitizenKeyRow | undefined> {
    const stored = await redis.get(cursorKey);
    if (!stored) return undefined;
    const [season, citizenId] = stored.split(":");
    return { season: Number(season), citizenId: BigInt(citizenId!) };
  }

  /**
   * One round: the recorded failures whose retry time has come, then the next page of the
   * cycle, read in one batch at the head.
   */
  async function refreshRound(): Promise<RoundResult> {
    const due = await store.dueReadFailures(Math.min(DUE_FAILURES_PER_ROUND, pageSize));
    const room = pageSize - due.length;
    let page: StoredMetadata[] = [];
    if (room > 0) {
      page = await store.storedMetadata(await cycleAfter(), room);
      // Moved before the reads, so a round that overlaps this one takes the next page.
      const last = page.at(-1);
      if (page.length < room || !last) await redis.del(cursorKey);
      else await redis.set(cursorKey, `${last.season}:${last.citizenId}`);
    }
    const dueKeys = new Set(due.map((row) => `${row.season}:${row.citizenId}`));
    const rows: Array<StoredMetadata | DueReadFailure> = [
      ...due,
      ...page.filter((row) => !dueKeys.has(`${row.season}:${row.citizenId}`)),
    ];
    if (rows.length === 0) return { read: 0, changed: 0, stillFailing: 0, stoppedReading: 0 };
    const head = await client.getBlockNumber();
    const found = await metadataAt(rows, head);
    const updates: MetadataUpdate[] = [];
    const postponed: PostponedReadFailure[] = [];
    const stopped: ReadFailureRow[] = [];
    rows.forEach((row, i) => {
      const metadata = found[i]!;
      if (metadata.unreadable === undefined) {
        const update = changeOf(row, metadata);
        if (update) updates.push(update);
      } else if ("attempts" in row) {
        const attempts = row.attempts + 1;
        postponed.push({
          season: row.season,
          citizenId: row.citizenId,
          reason: metadata.unreadable,
          blockNumber: head,
          attempts,
          retryAt: new Date(Date.now() + retryDelay(attempts)),
        });
      } else if (!row.failing) {
        stopped.push(failureOf(row, metadata.unreadable, head));
      }
    });
    await store.updateMetadata(updates);
    await store.postponeReadFailures(postponed);
    await store.recordReadFailures(stopped);
    return {
      read: rows.length,
      changed: updates.length,
      stillFailing: postponed.length,
      stoppedReading: stopped.length,
    };
  }

  async function runRound(_job: Job) {
    // A node without the head it just named (a load balancer's backend behind the others) is
    // no failure: the next round asks again.
    const result = await refreshRound().catch((error: unknown) => {
      if (error instanceof NodeBehind)
        return { read: 0, changed: 0, stillFailing: 0, stoppedReading: 0 };
      throw error;
    });
    if (result.changed > 0) log.info(result, "metadata changed at the head");
    if (result.stoppedReading > 0) {
      log.warn(result, "tokenURIs stopped reading: their last readable names and images are kept");
    }
    return result;
  }

  async function ensureScheduler() {
    await queue?.upsertJobScheduler(
      SCHEDULER_ID,
      { every: deps.intervalMs },
      { name: "refresh", opts: { removeOnComplete: true, removeOnFail: 50 } },
    );
  }

  return {
    refreshRound,

    /**
     * Reads the metadata of every citizen with a recorded read failure again, at the head, and
     * keeps what now reads (the served name and image change with it); one still failing keeps
     * its stored name and image, and its failure the new reason.
     */
    async retryFailures() {
      const failures = await store.readFailures();
      const head = await client.getBlockNumber();
      const found = await metadataAt(failures, head);
      const updates: MetadataUpdate[] = [];
      const still: ReadFailureRow[] = [];
      failures.forEach((row, i) => {
        const metadata = found[i]!;
        if (metadata.unreadable !== undefined) {
          still.push(failureOf(row, metadata.unreadable, head));
          return;
        }
        const { season, citizenId } = row;
        updates.push({
          season,
          citizenId,
          name: metadata.name ?? null,
          image: metadata.image ?? null,
        });
      });
      await store.updateMetadata(updates);
      await store.recordReadFailures(still);
      return { fixed: updates.length, still: still.length };
    },

    /**
     * Reads every citizen's metadata again at the head, many to an eth_call, and keeps what
     * changed. A tokenURI that does not read at the head keeps what is stored, and is counted.
     */
    async refreshAll(progress?: (done: number) => void) {
      const head = await client.getBlockNumber();
      const totals = { read: 0, changed: 0, unreadable: 0, block: head };
      let after: CitizenKeyRow | undefined;
      for (;;) {
        const stored = await store.storedMetadata(after, FULL_REFRESH_PAGE);
        if (stored.length === 0) return totals;
        const found = await metadataAt(stored, head);
        const updates: MetadataUpdate[] = [];
        const stopped: ReadFailureRow[] = [];
        stored.forEach((row, i) => {
          const metadata = found[i]!;
          if (metadata.unreadable === undefined) {
            const update = changeOf(row, metadata);
            if (update) updates.push(update);
            return;
          }
          totals.unreadable++;
          if (!row.failing) stopped.push(failureOf(row, metadata.unreadable, head));
        });
        await store.updateMetadata(updates);
        await store.recordReadFailures(stopped);
        totals.read += stored.length;
        totals.changed += updates.length;
        progress?.(totals.read);
        after = stored.at(-1);
      }
    },

    /** Schedules rounds every interval (once across processes) and takes them. */
    async start() {
      if (deps.intervalMs <= 0 || queue) return;
      const settings = { connection: redis, prefix: deps.queuePrefix };
      queue = new Queue(METADATA_QUEUE, settings);
      // Not a reason to stop the process (a Redis that is full refuses it): the timer below
      // puts the scheduler in place once Redis takes it.
      await ensureScheduler().catch((error) =>
        log.warn({ err: errorSummary(error) }, "could not put the metadata scheduler in place"),
      );
      timer = setInterval(() => {
        ensureScheduler().catch((error) =>
          log.warn({ err: errorSummary(error) }, "could not refresh the metadata scheduler"),
        );
      }, SCHEDULER_REFRESH_MS);
      worker = createJobWorker(METADATA_QUEUE, runRound, { ...settings, concurrency: 1 });
      // A node or database away fails every round: said once until a round succeeds.
      let failing: string | undefined;
      worker.on("failed", (_job, error) => {
        const summary = errorSummary(error);
        if (summary !== failing) log.warn({ err: summary }, "a metadata refresh round failed");
        failing = summary;
      });
      worker.on("completed", () => {
        failing = undefined;
      });
    },

    async close() {
      if (timer) clearInterval(timer);
      await worker?.close();
      await queue?.close();
    },

    /** For the outage reporter: the queue and worker, once started. */
    watched: () => [queue, worker].filter((each) => each !== undefined),
  };
}

export type MetadataRefresher = ReturnType<typeof createMetadataRefresher>;
