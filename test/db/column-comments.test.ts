import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import postgres from "postgres";
import type { Address } from "viem";
import { neoTokyoStakerAbi, s1CitizenAbi } from "../../contracts/generated/index.ts";
import * as schema from "../../db/schema.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

/** Every table db/schema.ts declares: the analyst's tables and the indexer's and API's own. */
const schemaTables = Object.values(schema)
  .filter((value) => is(value, PgTable))
  .map((table) => getTableName(table))
  .sort();

let database: Awaited<ReturnType<typeof createScratchDatabase>>;
let sql: postgres.Sql;

beforeAll(async () => {
  database = await createScratchDatabase("comments");
  sql = postgres(database.url, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await database?.drop();
});

describe("a freshly migrated database documents itself", () => {
  test("the migrations create every table of the schema", async () => {
    // drizzle keeps its own bookkeeping in the "drizzle" schema, so public holds only ours.
    const rows = await sql<{ table_name: string }[]>`
      select table_name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`;
    expect(rows.map((row) => row.table_name)).toEqual(schemaTables);
  });

  test("every table carries a comment", async () => {
    const rows = await sql<{ table_name: string }[]>`
      select c.relname as table_name from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind = 'r'
        and coalesce(obj_description(c.oid, 'pg_class'), '') = ''
      order by 1`;
    expect(rows.map((row) => row.table_name)).toEqual([]);
  });

  test("every column of every table carries a comment", async () => {
    const rows = await sql<{ column: string }[]>`
      select table_name || '.' || column_name as column from information_schema.columns
      where table_schema = 'public'
        and coalesce(col_description(format('%I.%I', table_schema, table_name)::regclass,
                                     ordinal_position::int), '') = ''
      order by table_name, ordinal_position`;
    expect(rows.map((row) => row.column)).toEqual([]);
  });
});

/** The comment on a column (`table.column`) or a table of a database. */
async function commentOn(db: postgres.Sql, target: string): Promise<string> {
  const [table, column] = target.split(".") as [string, string | undefined];
  const [row] = column
    ? await db<{ comment: string | null }[]>`
        select col_description(${table}::regclass, attnum) as comment from pg_attribute
        where attrelid = ${table}::regclass and attname = ${column}`
    : await db<{ comment: string | null }[]>`
        select obj_description(${table}::regclass, 'pg_class') as comment`;
  return row?.comment ?? "";
}

describe("the comments say what the chain says", () => {
  let devnet: ScenarioChain;
  let harness: TestIndexer;
  let db: postgres.Sql;

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 400, seed: "column-comments" });
    harness = await indexDevnet(devnet, {
      label: "comments_chain",
      to: await devnet.client.getBlockNumber(),
    });
    db = harness.indexer.database.client;
  });

  afterAll(async () => {
    await harness?.cleanup();
    await devnet?.stop();
  });

  test("has_vault is stakedS1's hasVault, which a component vault sets too; staked_vault_id is its stakedVaultId", async () => {
    const rows = await db<
      {
        staker: Address;
        citizen_id: string;
        has_vault: boolean;
        staked_vault_id: string;
        vault_id: string;
      }[]
    >`select staker, citizen_id::text, has_vault, staked_vault_id::text, vault_id::text
      from staked_citizens where season = 1 order by citizen_id`;
    const [checkpoint] = await db<{ indexed_block: string }[]>`
      select indexed_block::text from indexer_checkpoints`;
    const at = { blockNumber: BigInt(checkpoint!.indexed_block) };
    const chain = await Promise.all(
      rows.map(async (row) => {
        const id = BigInt(row.citizen_id);
        const [position, componentVault] = await Promise.all([
          devnet.client.readContract({
            address: devnet.deployment.addresses.staker,
            abi: neoTokyoStakerAbi,
            functionName: "stakedS1",
            args: [row.staker, id],
            ...at,
          }),
          devnet.client.readContract({
            address: devnet.deployment.addresses.s1Citizen,
            abi: s1CitizenAbi,
            functionName: "getVaultIdOfTokenId",
            args: [id],
            ...at,
          }),
        ]);
        const [, , , stakedVaultId, hasVault] = position;
        return { hasVault, stakedVaultId, componentVault };
      }),
    );
    const differing = rows.filter((row, i) => {
      const { hasVault, stakedVaultId, componentVault } = chain[i]!;
      const counted = componentVault !== 0n ? componentVault : stakedVaultId;
      return (
        row.has_vault !== hasVault ||
        BigInt(row.staked_vault_id) !== stakedVaultId ||
        BigInt(row.vault_id) !== counted
      );
    });
    expect(differing).toEqual([]);
    // Every case the comments name is on this chain: a component vault counted with none
    // staked, a vault staked with the citizen, and no vault.
    const cases = new Set(
      chain.map(({ hasVault, stakedVaultId, componentVault }) =>
        !hasVault ? "none" : componentVault !== 0n && stakedVaultId === 0n ? "component" : "staked",
      ),
    );
    expect([...cases].sort()).toEqual(["component", "none", "staked"]);
    for (const table of ["citizen_stakes", "staked_citizens"]) {
      const hasVault = await commentOn(db, `${table}.has_vault`);
      expect(hasVault).toContain("stakedS1.hasVault");
      expect(hasVault).toContain("component vault (staked_vault_id 0)");
      expect(hasVault).not.toContain("staked separately");
      const stakedVault = await commentOn(db, `${table}.staked_vault_id`);
      expect(stakedVault).toContain("stakedS1.stakedVaultId");
      expect(stakedVault).toContain("0 when none was, as when the citizen has a component vault");
    }
  });

  test("citizens keeps every citizen ever staked, withdrawn ones too", async () => {
    const [row] = await db<{ withdrawn: number; unknown: number }[]>`
      select
        (select count(*)::int from citizens c where not exists (
          select 1 from staked_citizens s
          where s.season = c.season and s.citizen_id = c.citizen_id)) as withdrawn,
        (select count(*)::int from (
          select distinct citizen_season, citizen_id from staker_events
          where event = 'Stake' and asset_type in ('s1_citizen', 's2_citizen')
          except select season, citizen_id from citizens) k) as unknown`;
    expect(row!.withdrawn).toBeGreaterThan(0);
    expect(row!.unknown).toBe(0);
    expect(await commentOn(db, "citizens")).toStartWith("Every citizen ever staked");
  });
});
