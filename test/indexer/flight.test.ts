import { afterAll, beforeAll, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { createDatabase, type Database } from "../../db/client.ts";
import { blocks } from "../../db/schema.ts";
import {
  endingWith,
  inOneFlight,
  preparedSql,
  settleOneFlight,
} from "../../indexer/store/flight.ts";
import { createScratchDatabase } from "../../scratch/database.ts";

const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let connection: ReturnType<typeof createDatabase>;
let db: Database;

beforeAll(async () => {
  database = await createScratchDatabase("flight");
  // One connection: the statements it has prepared are reused by the later flights.
  connection = createDatabase(database.url, { max: 1 });
  db = connection.db;
});

afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

test("a flight's statements run in the order given, each seeing those before it", async () => {
  for (const number of [1n, 2n]) {
    const [inserted, read, counted] = await db.transaction((tx) =>
      inOneFlight([
        tx
          .insert(blocks)
          .values({ number, hash: hash(1) })
          .returning()
          .prepare("insert"),
        tx.select().from(blocks).where(eq(blocks.number, number)).prepare("read"),
        preparedSql(tx, sql`select count(*)::int as n from blocks where number <= ${number}`, "n"),
      ]),
    );
    expect(inserted).toEqual([{ number, hash: hash(1) }]);
    expect(read).toEqual([{ number, hash: hash(1) }]);
    expect([...(counted as Iterable<unknown>)]).toEqual([{ n: Number(number) }]);
  }
});

test("a failing statement rejects the flight and the transaction keeps nothing of it", async () => {
  const flight = db.transaction((tx) =>
    inOneFlight([
      tx
        .insert(blocks)
        .values({ number: 10n, hash: hash(10) })
        .prepare("insert"),
      // The hash check refuses it.
      tx.insert(blocks).values({ number: 11n, hash: "not a hash" }).prepare("insert"),
      tx
        .insert(blocks)
        .values({ number: 12n, hash: hash(12) })
        .prepare("insert"),
    ]),
  );
  const error = await flight.catch((caught: Error) => caught);
  expect(error).toBeInstanceOf(Error);
  expect(String((error as Error & { cause?: unknown }).cause ?? error)).toContain(
    "blocks_hash_check",
  );
  const stored = await db.select().from(blocks).where(sql`${blocks.number} >= 10`);
  expect(stored).toEqual([]);
});

test("a settled flight gives what the statements before a failure found", async () => {
  const outcomes = await db
    .transaction(async (tx) => {
      const settled = await settleOneFlight([
        preparedSql(tx, sql`select 7::int as n`, "seven"),
        tx.insert(blocks).values({ number: 13n, hash: "not a hash" }).prepare("insert"),
        preparedSql(tx, sql`select 8::int as n`, "eight"),
      ]);
      throw settled;
    })
    .catch((settled: PromiseSettledResult<unknown>[]) => settled);
  expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "rejected"]);
  expect([...(outcomes[0] as PromiseFulfilledResult<Iterable<unknown>>).value]).toEqual([{ n: 7 }]);
});

test("a transaction's last statements leave with its COMMIT and are part of it", async () => {
  for (const number of [20n, 21n]) {
    const stored = await endingWith(db, async (tx) => {
      const [started] = await inOneFlight([
        preparedSql(tx, sql`select txid_current()::text as id`, "transaction_id"),
      ]);
      const [{ id }] = [...(started as Iterable<{ id: string }>)] as [{ id: string }];
      return {
        value: id,
        // Inserted only in the transaction that asked for its id above.
        last: [
          preparedSql(
            tx,
            sql`insert into blocks (number, hash)
              select ${number}::bigint, ${hash(Number(number))}
              where txid_current()::text = ${id}`,
            "insert_if_same",
          ),
        ],
      };
    });
    expect(stored).toMatch(/^[0-9]+$/);
    const rows = await db.select().from(blocks).where(eq(blocks.number, number));
    expect(rows).toEqual([{ number, hash: hash(Number(number)) }]);
  }
});

test("a failing last statement rejects, and the COMMIT keeps nothing", async () => {
  const ending = endingWith(db, async (tx) => {
    await inOneFlight([
      tx
        .insert(blocks)
        .values({ number: 30n, hash: hash(30) })
        .prepare("insert"),
    ]);
    return {
      value: "committed",
      last: [tx.insert(blocks).values({ number: 31n, hash: "not a hash" }).prepare("insert")],
    };
  });
  const error = await ending.catch((caught: Error) => caught);
  expect(String((error as Error & { cause?: unknown }).cause ?? error)).toContain(
    "blocks_hash_check",
  );
  const stored = await db.select().from(blocks).where(sql`${blocks.number} >= 30`);
  expect(stored).toEqual([]);
});
