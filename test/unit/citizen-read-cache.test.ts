import { describe, expect, test } from "bun:test";
import type { CitizenKey, CitizenReading } from "../../indexer/chain/citizen-reads.ts";
import { CitizenReadCache } from "../../indexer/fetch/citizen-read-cache.ts";

const reading = (key: CitizenKey): CitizenReading => ({
  ...key,
  identityId: key.citizenId,
  itemCacheId: 1n,
  landDeedId: 1n,
  tokenUri: { uri: "" },
});

describe("citizen reads shared by concurrent chunks", () => {
  test("two chunks meeting the same new citizen at once read it once", async () => {
    const cache = new CitizenReadCache();
    const asked: CitizenKey[][] = [];
    const read = async (keys: CitizenKey[]) => {
      asked.push(keys);
      await Bun.sleep(5);
      return keys.map(reading);
    };
    const seven = { season: 1 as const, citizenId: 7n };
    const eight = { season: 2 as const, citizenId: 7n };
    const [first, second] = await Promise.all([
      cache.read([seven], read),
      cache.read([seven, eight], read),
    ]);
    expect(asked).toEqual([[seven], [eight]]);
    expect(first[0]).toBe(second[0]!);
    expect(second[1]?.season).toBe(2);
  });

  test("a failed read is forgotten, so the retry reads again", async () => {
    const cache = new CitizenReadCache();
    const key = { season: 1 as const, citizenId: 9n };
    await expect(cache.read([key], () => Promise.reject(new Error("node down")))).rejects.toThrow(
      "node down",
    );
    await Bun.sleep(0);
    const [again] = await cache.read([key], async (keys) => keys.map(reading));
    expect(again?.citizenId).toBe(9n);
  });

  test("the oldest entries go beyond the limit", async () => {
    const cache = new CitizenReadCache(2);
    let reads = 0;
    const read = async (keys: CitizenKey[]) => {
      reads += keys.length;
      return keys.map(reading);
    };
    for (const id of [1n, 2n, 3n]) await cache.read([{ season: 1, citizenId: id }], read);
    await cache.read([{ season: 1, citizenId: 1n }], read);
    expect(reads).toBe(4);
  });

  test("a chunk meeting more new citizens than the limit gets every reading", async () => {
    const cache = new CitizenReadCache(2);
    const keys = [1n, 2n, 3n, 4n].map((citizenId) => ({ season: 1 as const, citizenId }));
    const readings = await cache.read(keys, async (missing) => missing.map(reading));
    expect(readings.map((r) => r.citizenId)).toEqual([1n, 2n, 3n, 4n]);
  });
});
