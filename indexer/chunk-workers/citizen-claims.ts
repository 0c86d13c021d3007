import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Season } from "../../lib/vocabulary.ts";
import type { CitizenKey, CitizenReading } from "../chain/citizen-reads.ts";
import { CitizenReadCache, type CitizenReads } from "../fetch/citizen-read-cache.ts";

export interface CitizenClaimTimes {
  /**
   * How long a claim holds off the other processes. Past it, the holder is taken for dead (or
   * stuck on a slow node) and whoever wants the citizen reads it: a waiter never waits longer.
   */
  claimMs: number;
  /** How often a waiter looks for the holder's reading. */
  pollMs: number;
  /**
   * How long a published reading stays. It only has to outlive the holder's chunk commit: from
   * then on the citizens table answers (knownCitizens) and nothing asks here.
   */
  keepMs: number;
}

const DEFAULT_TIMES: CitizenClaimTimes = { claimMs: 15_000, pollMs: 50, keepMs: 5 * 60_000 };

// Deletes a claim only while it is still ours: a lapsed claim may be another process's by now.
const RELEASE_OWN_CLAIM = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/**
 * Citizen reads shared by every worker process, claim before read. Concurrent chunks in any
 * process often meet the same new citizen before one has written it; its components never
 * change, so one read serves all. For each citizen this process's own chunks have not read
 * (CitizenReadCache, no Redis round trip), a reading another process published under the queue
 * prefix is taken; else the citizen is claimed in Redis (SET NX with an expiry) and read, and the
 * reading published for the others. A citizen claimed by another process is waited for until its
 * reading appears, or read here once the claim lapses, so a holder that died costs at most
 * `claimMs`. Each chunk still writes the rows of the citizens it met in its own transaction, so
 * no chunk is committed without them; the citizens table stays the idempotency guard.
 *
 * What it earns: on the 400-event devnet of test/indexer/citizen-claims.test.ts (chunks of 5
 * blocks), four worker processes read 29 citizens 43 times without the claims and 29 times with
 * them, as often as one worker (the test holds it there); the backfill bench's eth_calls stay flat
 * with the workers, 1,466 / 1,467 / 1,476 with 1 / 2 / 4 at 100k events (docs/performance.md,
 * Backfill, Reads).
 */
export class ClaimedCitizenReads implements CitizenReads {
  private readonly token = randomUUID();
  private readonly times: CitizenClaimTimes;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    times: Partial<CitizenClaimTimes> = {},
    private readonly local = new CitizenReadCache(),
  ) {
    this.times = { ...DEFAULT_TIMES, ...times };
  }

  read(
    keys: readonly CitizenKey[],
    readMissing: (keys: CitizenKey[]) => Promise<CitizenReading[]>,
  ): Promise<CitizenReading[]> {
    return this.local.read(keys, (missing) => this.readShared(missing, readMissing));
  }

  private async readShared(
    keys: CitizenKey[],
    readMissing: (keys: CitizenKey[]) => Promise<CitizenReading[]>,
  ): Promise<CitizenReading[]> {
    const readings = new Array<CitizenReading | undefined>(keys.length);
    let pending = keys.map((_, i) => i);
    for (;;) {
      pending = await this.takePublished(keys, pending, readings);
      if (pending.length === 0) break;
      const claimed = await this.claim(pending.map((i) => keys[i]!));
      const mine = pending.filter((_, j) => claimed[j]);
      if (mine.length > 0) {
        const read = await this.readClaimed(
          mine.map((i) => keys[i]!),
          readMissing,
        );
        mine.forEach((i, j) => {
          readings[i] = read[j];
        });
        pending = pending.filter((_, j) => !claimed[j]);
        if (pending.length === 0) break;
      }
      await Bun.sleep(this.times.pollMs);
    }
    return readings as CitizenReading[];
  }

  /** Fills in what other processes published; returns the indexes still without a reading. */
  private async takePublished(
    keys: CitizenKey[],
    pending: number[],
    readings: (CitizenReading | undefined)[],
  ): Promise<number[]> {
    const published = await this.redis.mget(pending.map((i) => this.readingKey(keys[i]!)));
    return pending.filter((i, j) => {
      const text = published[j];
      if (text === null || text === undefined) return true;
      readings[i] = decodeReading(text);
      return false;
    });
  }

  /** Whether this process now holds each citizen's claim. */
  private async claim(keys: CitizenKey[]): Promise<boolean[]> {
    const pipeline = this.redis.pipeline();
    for (const key of keys) {
      pipeline.set(this.claimKey(key), this.token, "PX", this.times.claimMs, "NX");
    }
    const answers = (await pipeline.exec()) ?? [];
    return keys.map((_, i) => {
      const [error, answer] = answers[i] ?? [new Error("no answer")];
      if (error) throw error;
      return answer === "OK";
    });
  }

  private async readClaimed(
    keys: CitizenKey[],
    readMissing: (keys: CitizenKey[]) => Promise<CitizenReading[]>,
  ): Promise<CitizenReading[]> {
    let readings: CitizenReading[];
    try {
      readings = await readMissing(keys);
    } catch (error) {
      // Whoever waits on these reads them now instead of at the claim's lapse.
      await this.release(keys).catch(() => {});
      throw error;
    }
    const pipeline = this.redis.pipeline();
    keys.forEach((key, i) => {
      pipeline.set(this.readingKey(key), encodeReading(readings[i]!), "PX", this.times.keepMs);
    });
    // The claim stays until it lapses: a waiter that missed the reading finds it, not a free claim.
    await pipeline.exec();
    return readings;
  }

  private async release(keys: CitizenKey[]) {
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.eval(RELEASE_OWN_CLAIM, 1, this.claimKey(key), this.token);
    await pipeline.exec();
  }

  private claimKey(key: CitizenKey) {
    return citizenClaimKey(this.prefix, key.season, key.citizenId);
  }

  private readingKey(key: CitizenKey) {
    return `${this.prefix}:citizen-reading:${key.season}:${key.citizenId}`;
  }
}

/** The claim key of a citizen, for a test that plays a holder which died. */
export const citizenClaimKey = (prefix: string, season: Season, citizenId: bigint) =>
  `${prefix}:citizen-claim:${season}:${citizenId}`;

type ReadingJson = Omit<
  CitizenReading,
  "citizenId" | "identityId" | "itemCacheId" | "landDeedId" | "componentVaultId" | "rewardRate"
> & {
  citizenId: string;
  identityId: string;
  itemCacheId: string;
  landDeedId: string;
  componentVaultId?: string;
  rewardRate?: string;
};

function encodeReading(reading: CitizenReading): string {
  const json: ReadingJson = {
    ...reading,
    citizenId: String(reading.citizenId),
    identityId: String(reading.identityId),
    itemCacheId: String(reading.itemCacheId),
    landDeedId: String(reading.landDeedId),
    componentVaultId: reading.componentVaultId?.toString(),
    rewardRate: reading.rewardRate?.toString(),
  };
  return JSON.stringify(json);
}

function decodeReading(text: string): CitizenReading {
  const json = JSON.parse(text) as ReadingJson;
  const reading: CitizenReading = {
    ...json,
    citizenId: BigInt(json.citizenId),
    identityId: BigInt(json.identityId),
    itemCacheId: BigInt(json.itemCacheId),
    landDeedId: BigInt(json.landDeedId),
    componentVaultId: undefined,
    rewardRate: undefined,
  };
  // Absent stays absent (S2 has neither), so a decoded reading equals the one read.
  if (json.componentVaultId === undefined) delete reading.componentVaultId;
  else reading.componentVaultId = BigInt(json.componentVaultId);
  if (json.rewardRate === undefined) delete reading.rewardRate;
  else reading.rewardRate = BigInt(json.rewardRate);
  return reading;
}
