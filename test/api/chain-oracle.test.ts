import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq, sql } from "drizzle-orm";
import { type Address, formatUnits } from "viem";
import { RECORD_WRITER, recordJson } from "../../api/modules/citizens/record.ts";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { stakedCitizens, stakerEvents } from "../../db/schema.ts";
import { createBlockReads } from "../../indexer/chain/block-reads.ts";
import { citizenStakers } from "../../ops/verify.ts";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";
import { createApiHarness } from "./support.ts";

type CitizenRecord = {
  id: string;
  type: "s1" | "s2";
  identity: { id: number; creditYield?: string; points?: number };
  vault?: { id: number; creditMultiplier: string; multiplier: number };
  timelock: { time: number; multiplier: number; endTime: number };
  bytes: { staked: number; points: number };
  totalPoints: number;
  stakedVaultId?: number;
  hasVault?: boolean;
};

/** Over real HTTP, against tables the indexer filled from a scenario: the chain is the oracle. */
describe("the API agrees with the staker's own views", () => {
  let devnet: ScenarioChain;
  let indexer: IndexedDevnet;
  let api: Awaited<ReturnType<typeof createApiHarness>>;
  let server: ReturnType<Awaited<ReturnType<typeof createApiHarness>>["app"]["listen"]>;
  let base: string;
  let indexedBlock: bigint;

  const get = (path: string) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${api.token}` } });

  beforeAll(async () => {
    devnet = await startScenarioChain({ events: 2_500, seed: "api-oracle" });
    indexer = await indexDevnet(devnet, { label: "api_oracle" });
    indexedBlock = indexer.indexedBlock;
    api = await createApiHarness({ databaseUrl: indexer.database.url });
    server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${server.server?.port}`;
  });

  afterAll(async () => {
    await server?.stop();
    await api?.close();
    await indexer?.cleanup();
    await devnet?.stop();
  });

  const positionsOf = (wallet: string) =>
    createBlockReads(indexer.indexer.client, { batching: "alone" }).read({
      address: devnet.deployment.addresses.staker,
      abi: stakerAbi,
      functionName: "getStakerPositions",
      args: [wallet as Address],
      blockNumber: indexedBlock,
    });

  test("every staked citizen's record equals stakedS1/stakedS2 and holds the contract's invariants", async () => {
    const wallets = await citizenStakers(indexer.indexer.database.db);
    let checked = 0;
    for (const wallet of wallets) {
      const positions = await positionsOf(wallet);
      const expected = [
        ...positions.stakedS1Citizens.map((c) => ({ type: "s1" as const, ...c })),
        ...positions.stakedS2Citizens.map((c) => ({
          type: "s2" as const,
          ...c,
          stakedVaultId: undefined,
          hasVault: undefined,
        })),
      ];
      const listing = await get(
        `/v1/staking/citizens?address=${wallet.toUpperCase().replace("0X", "0x")}&limit=100`,
      );
      expect(listing.status).toBe(200);
      expect(listing.headers.get("x-indexed-block")).toBe(String(indexedBlock));
      const { items } = (await listing.json()) as { items: CitizenRecord[] };
      expect(items.map((item) => `${item.type}:${item.id}`).sort()).toEqual(
        expected.map((c) => `${c.type}:${c.citizenId}`).sort(),
      );

      for (const citizen of expected) {
        const response = await get(
          `/v1/staking/citizens/${citizen.type}/${citizen.citizenId}?address=${wallet}`,
        );
        expect(response.status).toBe(200);
        const record = (await response.json()) as CitizenRecord;
        expect(record.totalPoints).toBe(Number(citizen.points));
        expect(record.timelock.endTime).toBe(Number(citizen.timelockEndTime));
        expect(record.bytes.staked).toBe(Number(formatUnits(citizen.stakedBytes, 18)));
        if (citizen.type === "s1") {
          expect(record.stakedVaultId).toBe(Number(citizen.stakedVaultId));
          expect(record.hasVault).toBe(citizen.hasVault);
          const base = Math.floor(
            ((record.identity.points ?? 0) *
              (record.vault?.multiplier ?? 0) *
              record.timelock.multiplier) /
              10_000,
          );
          expect(base + record.bytes.points).toBe(record.totalPoints);
        } else {
          expect(record.timelock.multiplier + record.bytes.points).toBe(record.totalPoints);
          expect(record.vault).toBeUndefined();
          expect(Object.keys(record.identity)).toEqual(["id"]);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  test("a withdrawn citizen is 404 for its old owner, and a re-staked one belongs to the new wallet only", async () => {
    const withdrawals = await indexer.indexer.database.db
      .selectDistinct({
        account: stakerEvents.account,
        season: stakerEvents.citizenSeason,
        id: stakerEvents.citizenId,
      })
      .from(stakerEvents)
      .where(eq(stakerEvents.event, "Withdraw"));
    let notStaked = 0;
    let restakedElsewhere = 0;
    for (const { account, season, id } of withdrawals) {
      if (season === null || id === null) continue;
      const positions = await positionsOf(account);
      const list = season === 1 ? positions.stakedS1Citizens : positions.stakedS2Citizens;
      if (list.some((c) => c.citizenId === id)) continue;
      const response = await get(`/v1/staking/citizens/s${season}/${id}?address=${account}`);
      expect(response.status).toBe(404);
      expect(response.headers.get("content-type")).toContain("application/problem+json");
      notStaked++;
      const listing = await get(
        `/v1/staking/citizens?address=${account}&type=s${season}&limit=100`,
      );
      const { items } = (await listing.json()) as { items: CitizenRecord[] };
      expect(items.map((item) => item.id)).not.toContain(String(id));
      const [current] = await indexer.indexer.database.db
        .select({ staker: stakedCitizens.staker })
        .from(stakedCitizens)
        .where(and(eq(stakedCitizens.season, season), eq(stakedCitizens.citizenId, id)));
      if (current && current.staker !== account) {
        expect(
          (await get(`/v1/staking/citizens/s${season}/${id}?address=${current.staker}`)).status,
        ).toBe(200);
        restakedElsewhere++;
      }
    }
    expect(notStaked).toBeGreaterThan(5);
    expect(restakedElsewhere).toBeGreaterThan(0);
  });

  test("each row's stored record is the row rendered, and is the API's answer, alone or listed", async () => {
    const rows = await indexer.indexer.database.db.select().from(stakedCitizens);
    expect(rows.length).toBeGreaterThan(100);
    const listed = new Map<string, string>();
    for (const wallet of new Set(rows.map((row) => row.staker))) {
      const listing = await get(`/v1/staking/citizens?address=${wallet}&limit=100`);
      const { items } = (await listing.json()) as { items: CitizenRecord[] };
      for (const item of items) listed.set(`${item.type}:${item.id}`, JSON.stringify(item));
    }
    for (const row of rows) {
      expect(row.recordWriter).toBe(RECORD_WRITER);
      expect(row.record).toBe(recordJson(row, {}));
      const type = `s${row.season}`;
      const response = await get(
        `/v1/staking/citizens/${type}/${row.citizenId}?address=${row.staker}`,
      );
      expect(await response.text()).toBe(row.record!);
      expect(listed.get(`${type}:${row.citizenId}`)).toBe(row.record!);
    }
  });

  test("a row changed by hand, or stored by another writer, is answered from its columns", async () => {
    const db = indexer.indexer.database.db;
    const [first, second] = await db.select().from(stakedCitizens).limit(2);
    const path = (row: typeof first) =>
      `/v1/staking/citizens/s${row!.season}/${row!.citizenId}?address=${row!.staker}`;
    const key = (row: typeof first) =>
      and(eq(stakedCitizens.season, row!.season), eq(stakedCitizens.citizenId, row!.citizenId));
    await db.update(stakedCitizens).set({ name: "Renamed by hand" }).where(key(first));
    // A new data version, as a write of the indexer's makes: no answer cached before is served.
    await db.execute(sql`update indexer_checkpoints set updated_at = now()`);
    const [renamed] = await db.select().from(stakedCitizens).where(key(first));
    expect(renamed!.record).toBeNull();
    const answer = await get(path(first));
    expect(((await answer.json()) as { name: string }).name).toBe("Renamed by hand");

    await db
      .update(stakedCitizens)
      .set({ record: sql`'{"written":"elsewhere"}'`, recordWriter: "another writer" })
      .where(key(second));
    await db.execute(sql`update indexer_checkpoints set updated_at = now()`);
    expect(await (await get(path(second))).text()).toBe(recordJson(second!, {}));

    // `migrate`'s refill stores both again with this writer, and nothing else.
    expect(await indexer.indexer.store.refillRecords()).toBe(2);
    for (const row of await db.select().from(stakedCitizens)) {
      expect(row.recordWriter).toBe(RECORD_WRITER);
      expect(row.record).toBe(recordJson(row, {}));
    }
    expect(await indexer.indexer.store.refillRecords()).toBe(0);
    expect(await indexer.mismatches()).toEqual([]);
  });
});
