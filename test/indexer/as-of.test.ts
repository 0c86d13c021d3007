import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { stakedCitizensAt } from "../../db/as-of.ts";
import { stakedCitizens, stakedCitizensHistory } from "../../db/schema.ts";
import { citizenStakers, verifyAgainstChain } from "../../ops/verify.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";

/**
 * staked_citizens_at(N): the tables' own history. For blocks across a scenario (stakes,
 * deposits, withdrawals, re-stakes by new owners), it must equal the staker's views read at
 * that block, and at the indexed block the live projection.
 */
describe("staked citizens as of any block", () => {
  let devnet: ScenarioDevnet;
  let harness: TestIndexer & { indexedBlock: bigint };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 1_500, seed: "as-of" });
    const stop = new AbortController();
    let blocks = 0;
    await devnet.scenario.live({
      intervalMs: 0,
      transactionsPerBlock: 25,
      signal: stop.signal,
      onBlock: () => {
        if (++blocks >= 12) stop.abort();
      },
    });
    harness = await indexDevnet(devnet, {
      label: "as-of",
      to: await devnet.client.getBlockNumber(),
    });
  });

  afterAll(async () => {
    await harness?.cleanup();
    await devnet?.stop();
  });

  test("at blocks sampled across the range it equals the staker's views at that block", async () => {
    const db = harness.indexer.database.db;
    const wallets = await citizenStakers(db);
    const start = devnet.deployment.deployBlock;
    const end = harness.indexedBlock;
    const samples = [0n, 1n, 2n, 3n, 5n, 8n].map((i) => start + ((end - start) * i) / 8n);
    let checked = 0;
    for (const at of [...new Set([...samples, end - 1n, end])]) {
      const mismatches = await verifyAgainstChain({
        client: harness.indexer.client,
        db,
        contracts: harness.indexer.contracts,
        at,
        wallets,
        asOf: true,
      });
      expect({ at, mismatches }).toEqual({ at, mismatches: [] });
      checked += (await stakedCitizensAt(db, at)).length;
    }
    expect(checked).toBeGreaterThan(100);
  });

  test("the upgrade migration's backfill rebuilds the same history from the stored rows", async () => {
    const db = harness.indexer.database.db;
    // The migration that created the history (found by content: the lead renumbers on merge).
    const folder = fileURLToPath(new URL("../../db/migrations", import.meta.url));
    const files = [...new Bun.Glob("*.sql").scanSync({ cwd: folder, absolute: true })].sort();
    const texts = await Promise.all(files.map((file) => Bun.file(file).text()));
    const migration = texts.find((text) =>
      text.includes('CREATE FUNCTION "project_staked_citizens"'),
    )!;
    const backfill = migration.trim().split("--> statement-breakpoint").at(-1)!;
    expect(backfill).toContain("project_staked_citizens");
    const history = () =>
      db
        .select()
        .from(stakedCitizensHistory)
        .orderBy(
          stakedCitizensHistory.season,
          stakedCitizensHistory.citizenId,
          stakedCitizensHistory.validFrom,
        );
    const written = await history();
    expect(written.length).toBeGreaterThan(100);
    await db.transaction(async (tx) => {
      await tx.delete(stakedCitizensHistory);
      await tx.execute(sql.raw(backfill));
    });
    expect(await history()).toEqual(written);
  });

  test("at the indexed block it equals the live projection, and one wallet's is a slice of it", async () => {
    const db = harness.indexer.database.db;
    const key = (row: { season: number; citizenId: bigint }) => `${row.season}:${row.citizenId}`;
    const sorted = <T extends { season: number; citizenId: bigint }>(rows: T[]) =>
      [...rows].sort((a, b) => key(a).localeCompare(key(b)));
    // The live rows' stored records are the API's, written beside the rule's columns.
    const live = (await db.select().from(stakedCitizens)).map((row) => ({
      ...row,
      record: null,
      recordWriter: null,
    }));
    expect(sorted(await stakedCitizensAt(db, harness.indexedBlock))).toEqual(sorted(live));
    const wallet = live[0]!.staker;
    expect(sorted(await stakedCitizensAt(db, harness.indexedBlock, wallet))).toEqual(
      sorted(live.filter((row) => row.staker === wallet)),
    );
  });
});
