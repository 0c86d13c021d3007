import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { createScratchDatabase } from "../../scratch/database.ts";

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let sql: postgres.Sql;

beforeAll(async () => {
  database = await createScratchDatabase("hex_checks");
  sql = postgres(database.url, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await database?.drop();
});

/** Near misses of lowercase 0x-hex of `digits` digits, and the thing itself. */
function candidates(digits: number): string[] {
  const body = "0123456789abcdef".repeat(8).slice(0, digits);
  return [
    `0x${body}`,
    `0x${"0".repeat(digits)}`,
    `0x${body.slice(1)}`,
    `0x${body}0`,
    `0x${body.toUpperCase()}`,
    `0X${body}`,
    `0x${body.slice(1)}g`,
    `0x${body.slice(1)}\n`,
    ` 0x${body.slice(1)}`,
    `0x${body.slice(2)}٣٣`,
    `00${body}`,
    "0x",
    "",
  ];
}

/** Inserts `value` where the check applies; true when Postgres kept it. */
async function accepted(insert: (tx: postgres.TransactionSql) => Promise<unknown>) {
  try {
    await sql.begin(async (tx) => {
      await insert(tx);
      throw new RolledBack();
    });
  } catch (error) {
    if (error instanceof RolledBack) return true;
    if ((error as { code?: string }).code === "23514") return false;
    throw error;
  }
  return true;
}

class RolledBack extends Error {
  override name = "RolledBack";
}

describe("address and hash checks keep exactly lowercase 0x-hex of the right length", () => {
  test("block hashes: 64 hex digits", async () => {
    for (const hash of candidates(64)) {
      const kept = await accepted(
        (tx) => tx`insert into blocks (number, hash) values (1, ${hash})`,
      );
      expect({ hash, kept }).toEqual({ hash, kept: /^0x[0-9a-f]{64}$/.test(hash) });
    }
  });

  test("addresses: 40 hex digits", async () => {
    for (const staker of candidates(40)) {
      const kept = await accepted(
        (
          tx,
        ) => tx`insert into indexer_checkpoints (staker, chain_id, indexed_block, scheduled_block)
          values (${staker}, 1, 0, 0)`,
      );
      expect({ staker, kept }).toEqual({ staker, kept: /^0x[0-9a-f]{40}$/.test(staker) });
    }
  });
});
