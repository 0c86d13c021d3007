import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { asc, getTableColumns, getTableName, sql } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import { createDatabase, type Database } from "../../db/client.ts";
import {
  blocks,
  citizenStakes,
  citizens,
  indexerHealth,
  readFailures,
  stakerEvents,
} from "../../db/schema.ts";
import { createIndexerStore } from "../../indexer/store/index.ts";
import { columnArray, MixedDefaults, unnestRows } from "../../indexer/store/unnest-rows.ts";
import { createScratchDatabase } from "../../scratch/database.ts";

/** The largest value of each kind a column can hold, so a narrowed cast overflows. */
const UINT256_MAX = 2n ** 256n - 1n;
const INT8_MAX = 2n ** 63n - 1n;
const INT4_MAX = 2 ** 31 - 1;
const INT2_MAX = 2 ** 15 - 1;
/** Everything an array literal must quote or escape, and text that looks like a NULL. */
const AWKWARD = [
  'say "hi", {a,b}',
  "back\\slash\\",
  "NULL",
  "",
  "  spaced  ",
  "tab\tline\nend",
  "日本 ✓",
];
const HASH = `0x${"ab".repeat(32)}`;
const ADDRESS = `0x${"cd".repeat(20)}`;

const event = (logIndex: number, overrides: Partial<typeof stakerEvents.$inferInsert> = {}) => ({
  blockNumber: INT8_MAX,
  logIndex,
  blockHash: HASH,
  transactionHash: AWKWARD[logIndex % AWKWARD.length]!,
  event: "Stake" as const,
  account: ADDRESS,
  asset: AWKWARD[(logIndex + 1) % AWKWARD.length]!,
  assetType: "s1_citizen" as const,
  timelockOption: UINT256_MAX,
  amountOrTokenId: UINT256_MAX - 1n,
  reward: 0n,
  tax: UINT256_MAX,
  citizenSeason: INT2_MAX,
  citizenId: UINT256_MAX,
  ...overrides,
});

/** Per table: rows that set every column (one with the largest values, one with every null). */
const cases: { table: PgTable; rows: Record<string, unknown>[] }[] = [
  {
    table: stakerEvents,
    rows: [
      event(0),
      event(1, { event: "Withdraw", assetType: "s2_citizen" }),
      event(2, { event: "Claim", assetType: "bytes" }),
      event(3, { assetType: "lp" }),
      event(4, {
        asset: null,
        assetType: null,
        timelockOption: null,
        amountOrTokenId: null,
        reward: null,
        tax: null,
        citizenSeason: null,
        citizenId: null,
      }),
      event(INT4_MAX),
    ],
  },
  {
    table: citizenStakes,
    rows: (["points", "calldata", "trace", "inferred", null] as const).map((source, i) => ({
      blockNumber: INT8_MAX,
      logIndex: i,
      season: INT2_MAX,
      citizenId: UINT256_MAX - BigInt(i),
      staker: AWKWARD[i]!,
      timelockDuration: UINT256_MAX,
      timelockMultiplier: 0n,
      timelockEndTime: UINT256_MAX,
      creditYield: source === null ? null : AWKWARD[i + 1]!,
      identityPoints: source === null ? null : UINT256_MAX,
      vaultId: source === null ? null : 0n,
      vaultCreditMultiplier: source === null ? null : AWKWARD[i + 2]!,
      vaultMultiplier: source === null ? null : UINT256_MAX,
      handClaim: source === null ? null : i % 2 === 0,
      handClaimSource: source,
      stakedVaultId: source === null ? null : UINT256_MAX,
      hasVault: source === null ? null : i % 2 === 1,
      basePoints: UINT256_MAX,
      configurationSource:
        source === null ? null : (["block", "parent", "trace", "inferred"] as const)[i],
    })),
  },
  {
    table: citizens,
    rows: [
      {
        season: INT2_MAX,
        citizenId: UINT256_MAX,
        identityId: UINT256_MAX,
        itemCacheId: 0n,
        landDeedId: UINT256_MAX - 7n,
        componentVaultId: UINT256_MAX,
        rewardRate: 1n,
        identityClass: AWKWARD[0]!,
        isHand: true,
        name: AWKWARD[1]!,
        image: AWKWARD[2]!,
      },
      {
        season: 1,
        citizenId: 0n,
        identityId: 1n,
        itemCacheId: 2n,
        landDeedId: 3n,
        componentVaultId: null,
        rewardRate: null,
        identityClass: null,
        isHand: null,
        name: null,
        image: null,
      },
    ],
  },
  {
    table: blocks,
    rows: [
      { number: INT8_MAX, hash: HASH },
      { number: 0n, hash: `0x${"0".repeat(64)}` },
    ],
  },
  {
    table: readFailures,
    rows: [
      {
        season: INT2_MAX,
        citizenId: UINT256_MAX,
        read: AWKWARD[0]!,
        reason: AWKWARD[1]!,
        blockNumber: INT8_MAX,
        recordedAt: new Date("2031-02-03T04:05:06.789Z"),
        attempts: 2_147_483_647,
        retryAt: new Date("2031-02-03T04:05:07.001Z"),
      },
    ],
  },
  {
    table: indexerHealth,
    rows: [
      {
        component: AWKWARD[0]!,
        okAt: new Date("1999-12-31T23:59:59.999Z"),
        failingSince: null,
        lastError: AWKWARD[5]!,
        lastErrorAt: new Date("2024-01-01T00:00:00Z"),
        fatal: true,
      },
      {
        component: AWKWARD[1]!,
        okAt: null,
        failingSince: new Date(0),
        lastError: null,
        lastErrorAt: null,
        fatal: false,
      },
    ],
  },
];

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let connection: ReturnType<typeof createDatabase>;
let db: Database;

beforeAll(async () => {
  database = await createScratchDatabase("unnest_rows");
  connection = createDatabase(database.url, { max: 1 });
  db = connection.db;
});

afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

/** Every row of the table, in the order of its columns (a total order for these rows). */
const readBack = (table: PgTable) =>
  db
    .select()
    .from(table)
    .orderBy(...Object.values(getTableColumns(table)).map((column) => asc(column)));

const clear = () =>
  db.execute(
    sql.raw(
      `truncate ${cases.map((entry) => `"${getTableName(entry.table)}"`).join(", ")} cascade`,
    ),
  );

describe("unnestRows writes rows exactly as drizzle's own insert does", () => {
  test("the test rows set every column of every table", () => {
    for (const { table, rows } of cases) {
      const columns = Object.keys(getTableColumns(table)).sort();
      for (const row of rows) expect(Object.keys(row).sort()).toEqual(columns);
    }
  });

  test("every column type round-trips: bigints and uint256 at their limits, awkward text, enums, booleans, timestamps, nulls", async () => {
    await clear();
    const expected = new Map<PgTable, Record<string, unknown>[]>();
    // The oracle: the same rows through drizzle's .values(), read back.
    for (const { table, rows } of cases) {
      await db.insert(table).values(rows);
      expected.set(table, await readBack(table));
    }
    await clear();
    for (const { table, rows } of cases) {
      await db.insert(table).select(unnestRows(table, rows));
    }
    for (const { table, rows } of cases) {
      const stored = await readBack(table);
      expect(stored).toEqual(expected.get(table)!);
      expect(stored).toHaveLength(rows.length);
      // And what went in comes out, value for value (drizzle's own insert could be wrong too).
      for (const row of rows) expect(stored).toContainEqual(row);
    }
  });

  test("a column no row sets takes its schema default, as with .values()", async () => {
    await clear();
    const before = new Date(Date.now() - 60_000);
    const failure = {
      season: 1,
      citizenId: 5n,
      read: "tokenURI",
      reason: "reverted",
      blockNumber: 9n,
    };
    await db.insert(readFailures).select(unnestRows(readFailures, [failure]));
    await db.insert(indexerHealth).select(unnestRows(indexerHealth, [{ component: "follow" }]));
    const [stored] = await db.select().from(readFailures);
    expect(stored).toMatchObject(failure);
    expect(stored!.recordedAt.getTime()).toBeGreaterThan(before.getTime());
    const [health] = await db.select().from(indexerHealth);
    expect(health).toEqual({
      component: "follow",
      okAt: null,
      failingSince: null,
      lastError: null,
      lastErrorAt: null,
      fatal: false,
    });
  });

  test("rows that set a defaulted column only in part are refused, not half-defaulted", () => {
    expect(() =>
      unnestRows(indexerHealth, [{ component: "a", fatal: true }, { component: "b" }]),
    ).toThrow(MixedDefaults);
  });

  test("conflict handling and returning work on the select form", async () => {
    await clear();
    const claims = [
      { number: 1n, hash: HASH },
      { number: 2n, hash: HASH },
    ];
    await db.insert(blocks).select(unnestRows(blocks, [claims[0]!]));
    const stored = await db
      .insert(blocks)
      .select(unnestRows(blocks, [{ number: 1n, hash: `0x${"ef".repeat(32)}` }, claims[1]!]))
      .onConflictDoUpdate({ target: blocks.number, set: { hash: sql.raw(`"blocks"."hash"`) } })
      .returning();
    expect(stored).toEqual(claims);
  });
});

describe("array parameters of a column's type", () => {
  test("a column's values pass as one array parameter, nulls and limits included", async () => {
    const values = [UINT256_MAX, null, 0n];
    const rows = await db.execute<{ value: string | null }>(
      sql`select u::text as value from unnest(${columnArray(citizens.citizenId, values)}) as u`,
    );
    expect(rows.map((row) => row.value)).toEqual([UINT256_MAX.toString(), null, "0"]);
  });

  test("the store finds known citizens by exact (season, id) pair", async () => {
    await clear();
    const citizen = (season: number, citizenId: bigint) => ({
      season,
      citizenId,
      identityId: 1n,
      itemCacheId: 2n,
      landDeedId: 3n,
    });
    await db
      .insert(citizens)
      .values([citizen(1, 5n), citizen(1, 6n), citizen(2, 6n), citizen(2, UINT256_MAX)]);
    const found = await createIndexerStore(db).knownCitizens([
      { season: 1, citizenId: 5n },
      { season: 2, citizenId: 5n },
      { season: 2, citizenId: 6n },
      { season: 2, citizenId: 6n },
      { season: 2, citizenId: UINT256_MAX },
    ]);
    expect(found.map((row) => `${row.season}:${row.citizenId}`).sort()).toEqual([
      "1:5",
      `2:${UINT256_MAX}`,
      "2:6",
    ]);
  });
});
