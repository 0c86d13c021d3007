import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Static } from "elysia";
import type { CitizenPage } from "../../api/modules/citizens/model.ts";
import { type CitizenInsert, createApiHarness, json, STAKER } from "./support.ts";

type Page = Static<typeof CitizenPage>;
type Item = Page["items"][number];

let api: Awaited<ReturnType<typeof createApiHarness>>;

/** 40 S1 and 40 S2 citizens with overlapping ids and only three distinct points and end times. */
const original: Partial<CitizenInsert>[] = [1, 2].flatMap((season) =>
  Array.from({ length: 40 }, (_, index) => ({
    season,
    citizenId: BigInt(index * 3 + 1),
    totalPoints: [100n, 150n, 200n][index % 3]!,
    timelockEndTime: [1_700_000_000n, 1_710_000_000n, 1_720_000_000n][(index * 7) % 3]!,
  })),
);

const keyOf = (season: number | string, id: bigint | string) => `${season}:${id}`;
const itemKey = (item: Item) => keyOf(item.type === "s1" ? 1 : 2, item.id);

/** Ids the original rows do not use (not 1 mod 3), so new rows interleave with them by id. */
let freeId = 1n;
function nextFreeId(): bigint {
  do freeId++;
  while (freeId % 3n === 1n);
  return freeId;
}

/** Rows that land before, between and after the pages already read, in every sort. */
async function insertMore() {
  const rows = [100n, 150n, 200n, 50n, 300n].map((totalPoints, index) => ({
    season: 1 + (index % 2),
    citizenId: nextFreeId(),
    totalPoints,
    timelockEndTime: 1_690_000_000n + BigInt(index) * 10_000_000n,
  }));
  await api.insertCitizens(rows);
}

/** The sort key as comparable numbers, following the documented order. */
function sortTuple(item: Item, sort: string): bigint[] {
  const season = item.type === "s1" ? 1n : 2n;
  if (sort === "id") return [BigInt(item.id), season];
  const value = sort === "totalPoints" ? item.totalPoints : item.timelock.endTime;
  return [BigInt(value), season, BigInt(item.id)];
}

function compare(a: bigint[], b: bigint[]): number {
  for (let index = 0; index < a.length; index++) {
    if (a[index]! !== b[index]!) return a[index]! < b[index]! ? -1 : 1;
  }
  return 0;
}

beforeAll(async () => {
  api = await createApiHarness();
  await api.setCheckpoint(5n);
  await api.insertCitizens(original);
});

afterAll(() => api.close());

describe("keyset pagination", () => {
  test("before any insert, the default page is 25 items sorted by id ascending, then type", async () => {
    const page = await json<Page>(await api.request(`/v1/staking/citizens?address=${STAKER}`));
    expect(page.items).toHaveLength(25);
    expect(page.items.slice(0, 4).map(itemKey)).toEqual(["1:1", "2:1", "1:4", "2:4"]);
    expect(page.nextCursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  for (const sort of ["id", "totalPoints", "endTime"]) {
    for (const order of ["asc", "desc"]) {
      for (const type of [undefined, "s1", "s2"] as const) {
        test(`sort=${sort} order=${order} type=${type ?? "both"} visits each citizen once while rows are inserted`, async () => {
          const seen: Item[] = [];
          let cursor: string | null = null;
          let pages = 0;
          do {
            const query = new URLSearchParams({ address: STAKER, sort, order, limit: "7" });
            if (type) query.set("type", type);
            if (cursor) query.set("cursor", cursor);
            const response = await api.request(`/v1/staking/citizens?${query}`);
            expect(response.status).toBe(200);
            const page: Page = await json<Page>(response);
            expect(page.items.length).toBeLessThanOrEqual(7);
            seen.push(...page.items);
            cursor = page.nextCursor;
            pages++;
            // Rows keep arriving for a while (then stop, so a walk ahead of them can end).
            if (pages <= 5) await insertMore();
          } while (cursor !== null && pages < 100);
          expect(cursor).toBeNull();

          const keys = seen.map(itemKey);
          expect(new Set(keys).size).toBe(keys.length);
          const expected = original
            .filter((row) => !type || row.season === (type === "s1" ? 1 : 2))
            .map((row) => keyOf(row.season!, row.citizenId!));
          for (const key of expected) expect(keys).toContain(key);
          for (const item of seen) if (type) expect(item.type).toBe(type);

          const direction = order === "asc" ? -1 : 1;
          for (let index = 1; index < seen.length; index++) {
            expect(compare(sortTuple(seen[index - 1]!, sort), sortTuple(seen[index]!, sort))).toBe(
              direction,
            );
          }
        });
      }
    }
  }

  test("a cursor is refused with another order", async () => {
    const first = await json<Page>(
      await api.request(`/v1/staking/citizens?address=${STAKER}&sort=totalPoints&limit=2`),
    );
    const response = await api.request(
      `/v1/staking/citizens?address=${STAKER}&sort=totalPoints&order=desc&cursor=${first.nextCursor}`,
    );
    expect(response.status).toBe(400);
  });

  test("an address with no citizens gets an empty page", async () => {
    const response = await api.request(
      "/v1/staking/citizens?address=0x000000000000000000000000000000000000beef",
    );
    expect(response.status).toBe(200);
    expect(await json<Page>(response)).toEqual({ items: [], nextCursor: null });
    expect(response.headers.get("x-indexed-block")).toBe("5");
  });
});
