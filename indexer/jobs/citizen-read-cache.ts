import type { CitizenKey, CitizenReading } from "../chain/citizen-reads.ts";

/**
 * Citizen reads shared by the chunks one process runs at once. Concurrent chunks often meet the
 * same new citizen before either has written it; its components never change, so the first
 * chunk's read serves the others (at whatever block it was made). A failed read is forgotten,
 * so a retry reads again. Bounded: the oldest entries go first.
 */
export class CitizenReadCache {
  private readonly entries = new Map<string, Promise<CitizenReading>>();

  constructor(private readonly limit = 20_000) {}

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
      this.evict();
    }
    return Promise.all(keys.map((key) => this.entries.get(keyOf(key))!));
  }

  private evict() {
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.limit) return;
      this.entries.delete(key);
    }
  }
}

const keyOf = (key: CitizenKey) => `${key.season}:${key.citizenId}`;
