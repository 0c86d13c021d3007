import type { CitizenKey, CitizenReading } from "../chain/citizen-reads.ts";

/**
 * Citizen readings kept by default: as many as the staker events a process works on at once
 * (EVENTS_IN_FLIGHT's default), each event meeting at most one citizen.
 */
const DEFAULT_LIMIT = 2_000;

/**
 * Reads the citizens a fetch needs; `readMissing` is how the chain is asked. The fetch stage is
 * handed one: this cache (the follower) or the Redis claims across processes (citizen-claims.ts).
 */
export interface CitizenReads {
  read(
    keys: readonly CitizenKey[],
    readMissing: (keys: CitizenKey[]) => Promise<CitizenReading[]>,
  ): Promise<CitizenReading[]>;
}

/**
 * Citizen reads shared by the chunks one process runs at once. Concurrent chunks often meet the
 * same new citizen before either has written it; its components never change, so the first
 * chunk's read serves the others (at whatever block it was made). A failed read is forgotten,
 * so a retry reads again.
 *
 * Bounded to what the chunks in flight can meet, the oldest entries going first: once a chunk is
 * written the citizens table answers for its citizens (knownCitizens) and nothing asks here
 * again, so an older entry only holds memory. A reading carries its tokenURI (kilobytes when the
 * JSON is inline): the 20,000 kept before added about 40 MB to a worker's peak RSS over the
 * 100,000-event backfill of bench/backfill.ts.
 */
export class CitizenReadCache implements CitizenReads {
  private readonly entries = new Map<string, Promise<CitizenReading>>();

  constructor(private readonly limit = DEFAULT_LIMIT) {}

  async read(
    keys: readonly CitizenKey[],
    readMissing: (keys: CitizenKey[]) => Promise<CitizenReading[]>,
  ): Promise<CitizenReading[]> {
    const missing = keys.filter((key) => !this.entries.has(keyOf(key)));
    if (missing.length > 0) {
      const batch = readMissing(missing);
      missing.forEach((key, i) => {
        const reading = batch.then((readings) => readings[i]!);
        // Handled here so an unread rejection never goes unobserved; callers still see it.
        reading.catch(() => this.entries.delete(keyOf(key)));
        this.entries.set(keyOf(key), reading);
      });
    }
    // Taken before the eviction: a chunk meeting more citizens than the limit evicts its own.
    const readings = keys.map((key) => this.entries.get(keyOf(key))!);
    this.evict();
    return Promise.all(readings);
  }

  private evict() {
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.limit) return;
      this.entries.delete(key);
    }
  }
}

const keyOf = (key: CitizenKey) => `${key.season}:${key.citizenId}`;
