import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, min, sql } from "drizzle-orm";
import { type Address, formatUnits } from "viem";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { indexerCheckpoints, stakerEvents } from "../../db/schema.ts";
import { createBlockReads } from "../../indexer/chain/block-reads.ts";
import { citizenStakers } from "../../ops/verify.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import { createApiHarness } from "./support.ts";

type CitizenRecord = {
  id: string;
  type: "s1" | "s2";
  timelock: { endTime: number };
  bytes: { staked: number };
  totalPoints: number;
  stakedVaultId?: number;
  hasVault?: boolean;
};
type Page = { items: CitizenRecord[]; nextCursor: string | null };

/** Blocks the follower leaves above the finality boundary: as-of answers there are not final. */
const FINALITY_DEPTH = 6;

/**
 * `?block=N` against a devnet with history (stakes, deposits, withdrawals, re-stakes by new
 * owners, several events a block): for blocks across the range, every as-of answer equals the
 * staker's own views read at that block.
 */
describe("answers as of a block", () => {
  let devnet: ScenarioDevnet;
  let indexer: IndexedDevnet;
  let api: Awaited<ReturnType<typeof createApiHarness>>;
  let firstBlock: bigint;
  let indexedBlock: bigint;
  let finalizedBlock: bigint;
  let wallets: string[];

  const get = (path: string, headers: Record<string, string> = {}) =>
    api.request(path, { headers });

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 1_200, seed: "api-as-of" });
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
    // Following with a finality depth: the follower reports the boundary, as in production.
    indexer = await indexDevnet(devnet, {
      label: "api_as_of",
      follow: true,
      options: { finalityDepth: FINALITY_DEPTH },
    });
    indexedBlock = indexer.indexedBlock;
    const db = indexer.indexer.database.db;
    const [first] = await db.select({ block: min(stakerEvents.blockNumber) }).from(stakerEvents);
    firstBlock = first!.block!;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [checkpoint] = await db.select().from(indexerCheckpoints);
      if (checkpoint?.finalizedBlock === indexedBlock - BigInt(FINALITY_DEPTH)) {
        finalizedBlock = checkpoint.finalizedBlock;
        break;
      }
      if (Date.now() > deadline) throw new Error("the follower never reported the boundary");
      await Bun.sleep(50);
    }
    wallets = await citizenStakers(db);
    api = await createApiHarness({ databaseUrl: indexer.database.url });
  });

  afterAll(async () => {
    await api?.close();
    await indexer?.cleanup();
    await devnet?.stop();
  });

  const positionsAt = (wallet: string, at: bigint) =>
    createBlockReads(indexer.indexer.client, { batching: "alone" }).read({
      address: devnet.deployment.addresses.staker,
      abi: stakerAbi,
      functionName: "getStakerPositions",
      args: [wallet as Address],
      blockNumber: at,
    });

  async function listingAt(wallet: string, at: bigint): Promise<CitizenRecord[]> {
    const items: CitizenRecord[] = [];
    let cursor: string | null = null;
    do {
      const response = await get(
        `/v1/staking/citizens?address=${wallet}&block=${at}&limit=7&sort=totalPoints&order=desc${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(response.status).toBe(200);
      expect(response.headers.get("x-indexed-block")).toBe(String(indexedBlock));
      expect(response.headers.get("x-as-of-block")).toBe(String(at));
      const page = (await response.json()) as Page;
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    return items;
  }

  async function checkWalletAt(wallet: string, at: bigint): Promise<number> {
    const positions = await positionsAt(wallet, at);
    const expected = [
      ...positions.stakedS1Citizens.map((c) => ({ type: "s1" as const, ...c })),
      ...positions.stakedS2Citizens.map((c) => ({ type: "s2" as const, ...c })),
    ];
    const listed = await listingAt(wallet, at);
    expect({ wallet, at, items: listed.map((item) => `${item.type}:${item.id}`).sort() }).toEqual({
      wallet,
      at,
      items: expected.map((c) => `${c.type}:${c.citizenId}`).sort(),
    });
    // The listing's order: points descending, ties by type, then id (both descending).
    const order = listed.map((item) => [item.totalPoints, item.type, Number(item.id)] as const);
    const sorted = [...order].sort((a, b) =>
      a[0] !== b[0] ? b[0] - a[0] : a[1] !== b[1] ? (a[1] < b[1] ? 1 : -1) : b[2] - a[2],
    );
    expect(order).toEqual(sorted);
    for (const citizen of expected) {
      const response = await get(
        `/v1/staking/citizens/${citizen.type}/${citizen.citizenId}?address=${wallet}&block=${at}`,
      );
      expect(response.status).toBe(200);
      expect(response.headers.get("x-indexed-block")).toBe(String(indexedBlock));
      expect(response.headers.get("x-as-of-block")).toBe(String(at));
      const record = (await response.json()) as CitizenRecord;
      expect(record).toEqual(
        listed.find((item) => item.type === citizen.type && item.id === record.id)!,
      );
      const chain = {
        totalPoints: Number(citizen.points),
        endTime: Number(citizen.timelockEndTime),
        staked: Number(formatUnits(citizen.stakedBytes, 18)),
        ...("stakedVaultId" in citizen && {
          stakedVaultId: Number(citizen.stakedVaultId),
          hasVault: citizen.hasVault,
        }),
      };
      expect({ at, id: record.id, ...chain }).toEqual({
        at,
        id: record.id,
        totalPoints: record.totalPoints,
        endTime: record.timelock.endTime,
        staked: record.bytes.staked,
        ...(record.type === "s1" && {
          stakedVaultId: record.stakedVaultId,
          hasVault: record.hasVault,
        }),
      });
    }
    return expected.length;
  }

  test("at blocks sampled across the range, every listing and record equals the staker's views there", async () => {
    const span = indexedBlock - firstBlock;
    const samples = [0n, 1n, 3n, 5n, 7n].map((i) => firstBlock + (span * i) / 8n);
    let checked = 0;
    for (const at of [...new Set([...samples, finalizedBlock, indexedBlock - 1n, indexedBlock])]) {
      const counts = await Promise.all(wallets.map((wallet) => checkWalletAt(wallet, at)));
      checked += counts.reduce((sum, count) => sum + count, 0);
    }
    expect(checked).toBeGreaterThan(200);
  });

  test("a citizen staked only later, or withdrawn before the block, is 404 for that wallet then", async () => {
    const db = indexer.indexer.database.db;
    const events = await db
      .select({
        event: stakerEvents.event,
        block: stakerEvents.blockNumber,
        account: stakerEvents.account,
        season: stakerEvents.citizenSeason,
        id: stakerEvents.citizenId,
      })
      .from(stakerEvents)
      .where(
        and(
          sql`${stakerEvents.assetType} in ('s1_citizen', 's2_citizen')`,
          sql`${stakerEvents.blockNumber} > ${firstBlock}`,
        ),
      )
      .orderBy(stakerEvents.blockNumber, stakerEvents.logIndex);
    // A Stake asked about just before its block; a Withdraw asked about at its block.
    const cases = [
      ...events.filter((e) => e.event === "Stake").map((e) => ({ ...e, at: e.block - 1n })),
      ...events.filter((e) => e.event === "Withdraw").map((e) => ({ ...e, at: e.block })),
    ].filter((_, index) => index % 4 === 0);
    const outcomes = { notStaked: 0, staked: 0 };
    await Promise.all(
      cases.map(async ({ account, season, id, at, event }) => {
        const positions = await positionsAt(account, at);
        const staked = (
          season === 1 ? positions.stakedS1Citizens : positions.stakedS2Citizens
        ).some((c) => c.citizenId === id);
        const response = await get(
          `/v1/staking/citizens/s${season}/${id}?address=${account}&block=${at}`,
        );
        expect({ event, at, status: response.status }).toEqual({
          event,
          at,
          status: staked ? 200 : 404,
        });
        expect(response.headers.get("x-as-of-block")).toBe(String(at));
        if (!staked) {
          expect(response.headers.get("content-type")).toContain("application/problem+json");
          const problem = (await response.json()) as { detail: string };
          expect(problem.detail).toContain(`after block ${at}`);
        }
        outcomes[staked ? "staked" : "notStaked"]++;
      }),
    );
    expect(outcomes.notStaked).toBeGreaterThan(20);
  });

  test("a block outside the indexed range or not a decimal block number is a 400 naming block", async () => {
    const [wallet] = wallets;
    const range = `blocks ${firstBlock} to ${indexedBlock} are available`;
    const cases: [string, string | null][] = [
      [String(firstBlock - 1n), range],
      [String(indexedBlock + 1n), range],
      ["99999999999999999999999999999", range],
      // Past 78 digits too: a number, judged against the range like any other.
      [`1${"0".repeat(80)}`, range],
      ["abc", null],
      ["-1", null],
      ["1.5", null],
      ["0x10", null],
      ["", null],
    ];
    for (const [block, detail] of cases) {
      for (const path of [
        `/v1/staking/citizens/s1/1?address=${wallet}&block=${block}`,
        `/v1/staking/citizens/s2/1?address=${wallet}&block=${block}`,
        `/v1/staking/citizens?address=${wallet}&block=${block}`,
      ]) {
        const response = await get(path);
        expect({ path, status: response.status }).toEqual({ path, status: 400 });
        expect(response.headers.get("content-type")).toContain("application/problem+json");
        expect(response.headers.get("x-as-of-block")).toBeNull();
        const problem = (await response.json()) as { parameter: string; detail: string };
        expect(problem.parameter).toBe("block");
        if (detail) expect(problem.detail).toContain(detail);
      }
    }
    // The token is judged first: an unknown token with a bad block is 401.
    const refused = await get(`/v1/staking/citizens?address=${wallet}&block=${indexedBlock + 1n}`, {
      authorization: "Bearer not-a-token",
    });
    expect(refused.status).toBe(401);
  });

  test("a block zero-padded past 78 digits is the same block", async () => {
    const [wallet] = wallets;
    const at = (block: string) => get(`/v1/staking/citizens?address=${wallet}&block=${block}`);
    const plain = await at(String(indexedBlock));
    expect(plain.status).toBe(200);
    const body = await plain.text();
    for (const zeros of [1, 78, 500]) {
      const padded = await at(`${"0".repeat(zeros)}${indexedBlock}`);
      expect({ zeros, status: padded.status }).toEqual({ zeros, status: 200 });
      expect(padded.headers.get("x-as-of-block")).toBe(String(indexedBlock));
      expect(await padded.text()).toBe(body);
    }
  });

  test("an answer at or below the finality boundary is revalidated, and its ETag (block and body) holds at later versions while the body is the same", async () => {
    const server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const base = `http://127.0.0.1:${server.server?.port}`;
      const fetchWith = (path: string, headers: Record<string, string> = {}) =>
        fetch(`${base}${path}`, { headers: { authorization: `Bearer ${api.token}`, ...headers } });
      const final = finalizedBlock;
      const holders = await Promise.all(
        wallets.map(async (wallet) => ({ wallet, positions: await positionsAt(wallet, final) })),
      );
      const holder = holders.find((each) => each.positions.stakedS1Citizens.length > 0)!;
      const { wallet } = holder;
      const s1 = holder.positions.stakedS1Citizens[0]!;
      const paths = [
        `/v1/staking/citizens?address=${wallet}&block=${final}`,
        `/v1/staking/citizens?address=${wallet}&block=${final}&sort=endTime&limit=3`,
        `/v1/staking/citizens/s1/${s1.citizenId}?address=${wallet}&block=${final}`,
      ];
      for (const path of paths) {
        const first = await fetchWith(path);
        expect(first.status).toBe(200);
        expect(first.headers.get("cache-control")).toBe("private, no-cache");
        const etag = first.headers.get("etag")!;
        expect(etag).toStartWith(`"block-${final}.`);
        expect(first.headers.get("x-as-of-block")).toBe(String(final));
        expect(first.headers.get("x-indexed-block")).toBe(String(indexedBlock));
        const body = await first.text();

        // A new data version (the checkpoint written again) leaves a final block's body as it was.
        await api.db.update(indexerCheckpoints).set({ updatedAt: sql`clock_timestamp()` });
        const again = await fetchWith(path, { "if-none-match": etag });
        expect(again.status).toBe(304);
        expect(again.headers.get("etag")).toBe(etag);
        expect(again.headers.get("cache-control")).toBe("private, no-cache");
        expect(again.headers.get("x-as-of-block")).toBe(String(final));
        expect(again.headers.get("x-indexed-block")).toBe(String(indexedBlock));
        const reread = await fetchWith(path);
        expect(reread.headers.get("etag")).toBe(etag);
        expect(await reread.text()).toBe(body);
      }
    } finally {
      await server.stop();
    }
  });

  test("an answer above the finality boundary goes by the data version, like the current one", async () => {
    const wallet = wallets[0]!;
    const above = finalizedBlock + 1n;
    expect(above).toBeLessThanOrEqual(indexedBlock);
    const path = `/v1/staking/citizens?address=${wallet}&block=${above}`;
    const first = await get(path);
    expect(first.status).toBe(200);
    expect(first.headers.get("cache-control")).toBe("private, no-cache");
    expect(first.headers.get("x-as-of-block")).toBe(String(above));
    const etag = first.headers.get("etag")!;
    expect(etag).not.toStartWith('"block-');
    expect(etag).not.toBe(
      (await get(`/v1/staking/citizens?address=${wallet}`)).headers.get("etag"),
    );
    const unchanged = await get(path, { "if-none-match": etag });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get("x-as-of-block")).toBe(String(above));

    await api.db.update(indexerCheckpoints).set({ updatedAt: sql`clock_timestamp()` });
    const moved = await get(path, { "if-none-match": etag });
    expect(moved.status).toBe(200);
    expect(moved.headers.get("etag")).not.toBe(etag);
  });

  test("the OpenAPI document describes block and X-As-Of-Block", async () => {
    const document = (await (
      await api.app.handle(new Request("http://localhost/openapi.json"))
    ).json()) as {
      paths: Record<
        string,
        {
          get: {
            parameters: { name: string; in: string; schema: { pattern?: string } }[];
            responses: Record<string, { headers?: Record<string, unknown> }>;
          };
        }
      >;
    };
    for (const path of [
      "/v1/staking/citizens",
      "/v1/staking/citizens/s1/{id}",
      "/v1/staking/citizens/s2/{id}",
    ]) {
      const operation = document.paths[path]!.get;
      const block = operation.parameters.find((p) => p.name === "block" && p.in === "query");
      expect(block?.schema.pattern).toBe("^[0-9]+$");
      expect(Object.keys(operation.responses["200"]!.headers ?? {})).toContain("x-as-of-block");
      expect(Object.keys(operation.responses["304"]!.headers ?? {})).toContain("x-as-of-block");
    }
  });
});
