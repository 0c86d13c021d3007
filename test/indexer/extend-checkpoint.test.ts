/**
 * The follower's write (`writeRange` with `extendsCheckpoint`) against real Postgres: its advance
 * goes in the same flight as its rows, as if the checkpoint were still at the range's parent, so
 * what it finds after the flight must still decide: written ranges beyond it are joined, a moved
 * checkpoint or a differing hash claim keeps nothing.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createDatabase, type Database } from "../../db/client.ts";
import { blocks, indexedRanges } from "../../db/schema.ts";
import { createIndexerStore, type IndexerStore } from "../../indexer/store/index.ts";
import {
  CheckpointMoved,
  LinkConflict,
  type RangeWrite,
} from "../../indexer/store/range-writes.ts";
import { createScratchDatabase } from "../../scratch/database.ts";

const STAKER = `0x${"5".repeat(40)}`;
const hash = (n: bigint, branch = 1) =>
  `0x${branch.toString(16)}${n.toString(16).padStart(63, "0")}`;

/** A range with no logs: its first block's parent and its last block claimed. */
function emptyRange(from: bigint, to: bigint, branch = 1): RangeWrite {
  return {
    fromBlock: from,
    toBlock: to,
    events: [],
    stakes: [],
    citizens: [],
    readFailures: [],
    blockHashes: new Map([
      [from - 1n, hash(from - 1n)],
      [to, hash(to, branch)],
    ]),
  };
}

let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let connection: ReturnType<typeof createDatabase>;
let db: Database;
let store: IndexerStore;

beforeAll(async () => {
  scratch = await createScratchDatabase("extend-checkpoint");
  connection = createDatabase(scratch.url);
  db = connection.db;
  store = createIndexerStore(db);
  await store.ensureCheckpoint(STAKER, 1, 100n);
});

afterAll(async () => {
  await connection?.close();
  await scratch?.drop();
});

test("the follower's write joins the written ranges beyond it", async () => {
  // A chunk ahead of the checkpoint waits for the blocks before it.
  await store.writeRange(emptyRange(102n, 103n));
  expect((await store.checkpoint())!.indexedBlock).toBe(99n);
  const written = await store.writeRange(emptyRange(100n, 101n), { extendsCheckpoint: true });
  expect(written.indexedBlock).toBe(103n);
  expect((await store.checkpoint())!.indexedBlock).toBe(103n);
  expect(await db.select().from(indexedRanges)).toEqual([]);
});

test("a write from a checkpoint that has moved throws CheckpointMoved and keeps nothing", async () => {
  const stale = emptyRange(100n, 110n);
  const error = await store
    .writeRange(stale, { extendsCheckpoint: true })
    .catch((caught: Error) => caught);
  expect(error).toBeInstanceOf(CheckpointMoved);
  expect((await store.checkpoint())!.indexedBlock).toBe(103n);
  expect(await db.select().from(indexedRanges)).toEqual([]);
  const numbers = (await db.select().from(blocks)).map((block) => block.number);
  expect(numbers).not.toContain(110n);
});

test("a write whose claim differs throws LinkConflict and keeps nothing", async () => {
  const forked = emptyRange(104n, 106n);
  forked.blockHashes.set(103n, hash(103n, 2));
  const error = await store
    .writeRange(forked, { extendsCheckpoint: true })
    .catch((caught: Error) => caught);
  expect(error).toBeInstanceOf(LinkConflict);
  expect(error).toMatchObject({ block: 103n, stored: hash(103n), claimed: hash(103n, 2) });
  expect((await store.checkpoint())!.indexedBlock).toBe(103n);
  const numbers = (await db.select().from(blocks)).map((block) => block.number);
  expect(numbers).not.toContain(106n);
});
