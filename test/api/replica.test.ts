import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { type Address, formatUnits } from "viem";
import { POLL_MS } from "../../api/replica-watch.ts";
import { mainnetStakerAbi as stakerAbi } from "../../contracts/generated/MainnetStaker.ts";
import { createToken, revokeToken } from "../../db/tokens.ts";
import { freePort } from "../../devnet/anvil.ts";
import { readUnbatched } from "../../indexer/chain/unbatched-read.ts";
import { citizenStakers } from "../../ops/verify.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import {
  type PrivatePostgres,
  type Standby,
  startPrivatePostgres,
} from "../support/private-postgres.ts";
import { stakingActions } from "../support/staking.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";
import { assemble, openStream, type StreamClient, type StreamEvent } from "./stream-client.ts";
import { createApiHarness } from "./support.ts";

const WALLET: Address = "0x00000000000000000000000000000000000e9a11";
const READY_MAX_LAG_BLOCKS = 1;
const USAGE_FLUSH_MS = 200;
const BYTE = 10n ** 18n;

type Harness = Awaited<ReturnType<typeof createApiHarness>>;
type Record_ = {
  type: "s1" | "s2";
  id: string;
  totalPoints: number;
  timelock: { endTime: number };
  bytes: { staked: number };
};

/**
 * The API reading a real streaming replica: a private primary and a `pg_basebackup -R` hot
 * standby, the indexer writing the primary, the API's reads (DATABASE_READ_URL) on the standby.
 * Whatever it answers, ETags and x-indexed-block included, and whatever its live stream sends,
 * is what the standby has replayed, never more; with the standby's replay paused the answers
 * stay at its block and /readyz says it is behind, and a revocation on the primary still holds.
 */
describe("the API on a streaming replica", () => {
  let cluster: PrivatePostgres;
  let replica: Standby;
  let devnet: ScenarioDevnet;
  let indexer: IndexedDevnet;
  let actions: ReturnType<typeof stakingActions>;
  let api: Harness;
  let base: string;
  let stopServer = async () => {};
  let standbyUrl: string;
  /** The indexer's database on the standby, read directly. */
  let standby: postgres.Sql;

  const get = (path: string, headers: Record<string, string> = {}, token = api.token) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const listingPath = (wallet: string) => `/v1/staking/citizens?address=${wallet}&limit=100`;

  /** A wallet's citizens as the staker's own view says at `block`, in the form compared. */
  async function chainHolding(wallet: string, block: bigint) {
    const positions = await readUnbatched(indexer.indexer.client, {
      address: devnet.deployment.addresses.staker,
      abi: stakerAbi,
      functionName: "getStakerPositions",
      args: [wallet as Address],
      blockNumber: block,
    });
    const holding = new Map<string, string>();
    for (const [type, citizens] of [
      ["s1", positions.stakedS1Citizens],
      ["s2", positions.stakedS2Citizens],
    ] as const) {
      for (const citizen of citizens) {
        holding.set(
          `${type}:${citizen.citizenId}`,
          `${citizen.points}/${citizen.timelockEndTime}/${Number(formatUnits(citizen.stakedBytes, 18))}`,
        );
      }
    }
    return holding;
  }

  /** Records as the API serves them, in the same form. */
  const apiHolding = (records: Iterable<unknown>) =>
    new Map(
      [...records].map((value) => {
        const record = value as Record_;
        return [
          `${record.type}:${record.id}`,
          `${record.totalPoints}/${record.timelock.endTime}/${record.bytes.staked}`,
        ];
      }),
    );

  const lastSynced = (events: StreamEvent[]) =>
    (events.filter((event) => event.event === "synced").at(-1)?.data as { block: number })?.block ??
    -1;

  /**
   * Every `synced` a stream sent closes a batch that made the client's copy equal the wallet's
   * citizens at that block: checked against the chain at each one.
   */
  async function expectEverySyncedTrue(client: StreamClient, wallet: string) {
    const held = new Map<string, unknown>();
    let previous = -1;
    let checked = 0;
    let batch: StreamEvent[] = [];
    for (const event of client.events) {
      batch.push(event);
      if (event.event !== "synced") continue;
      assemble(batch, held);
      batch = [];
      const block = (event.data as { block: number }).block;
      expect(block).toBeGreaterThanOrEqual(previous);
      previous = block;
      expect(apiHolding(held.values())).toEqual(await chainHolding(wallet, BigInt(block)));
      checked++;
    }
    return checked;
  }

  beforeAll(async () => {
    cluster = await startPrivatePostgres();
    replica = await cluster.addStandby();
    devnet = await startScenarioDevnet({ events: 200, seed: "replica" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
    await actions.mine([
      actions.mintS1(WALLET, 60_001n),
      actions.mintS2(WALLET, 60_002n),
      actions.mintS1(WALLET, 60_003n),
    ]);
    await actions.mine([actions.stake(WALLET, 1, 60_001n)]);
    indexer = await indexDevnet(devnet, {
      label: "replica",
      databaseServer: cluster.primary.url(),
      options: { followIntervalMs: 50 },
      follow: true,
    });
    standbyUrl = replica.server.url(indexer.database.name);
    standby = postgres(standbyUrl, { max: 1, onnotice: () => {} });
    api = await createApiHarness({
      databaseUrl: indexer.database.url,
      databaseReadUrl: standbyUrl,
      settings: { readyMaxLagBlocks: READY_MAX_LAG_BLOCKS, tokenUsageFlushMs: USAGE_FLUSH_MS },
    });
    const server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${server.server?.port}`;
    stopServer = async () => {
      await server.stop(true);
    };
    // The harness's token was written on the primary: usable once the standby has it.
    await replica.caughtUp();
  }, 4 * LOADED_MACHINE_MS);

  afterAll(async () => {
    await stopServer();
    await api?.close();
    await standby?.end({ timeout: 1 });
    await replica?.resumeReplay().catch(() => {});
    await indexer?.cleanup();
    await devnet?.stop();
    await cluster?.stop();
  });

  test("it reads the standby, and answers equal the staker's views at the indexed block", async () => {
    const [recovering] = await standby`select pg_is_in_recovery() as yes`;
    expect(recovering?.yes).toBe(true);
    await replica.caughtUp();
    const block = indexer.indexedBlock;
    const wallets = await citizenStakers(indexer.indexer.database.db);
    expect(wallets.length).toBeGreaterThan(3);
    for (const wallet of [...wallets, WALLET.toLowerCase()]) {
      const response = await get(listingPath(wallet));
      expect(response.status).toBe(200);
      expect(response.headers.get("x-indexed-block")).toBe(String(block));
      const { items } = (await response.json()) as { items: Record_[] };
      expect(apiHolding(items)).toEqual(await chainHolding(wallet, block));
    }
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, primary: "ok", replicaLagBlocks: 0 });
  });

  /** Calls of each statement run in the indexer's database on a server, by query id. */
  async function statementCalls(sql: postgres.Sql) {
    const rows = await sql<{ id: string; query: string; calls: number }[]>`
      select queryid::text as id, query, calls::int as calls
      from pg_stat_statements join pg_database on pg_database.oid = dbid
      where datname = ${indexer.database.name}`;
    return new Map(rows.map((row) => [row.id, row]));
  }

  /** The statements run since `before`, with their calls since. */
  const callsSince = (
    before: Awaited<ReturnType<typeof statementCalls>>,
    after: Awaited<ReturnType<typeof statementCalls>>,
  ) =>
    [...after.values()]
      .map((row) => ({ query: row.query, calls: row.calls - (before.get(row.id)?.calls ?? 0) }))
      .filter((row) => row.calls > 0);

  test("a request is one statement, on the standby; token use is written on the primary", async () => {
    await cluster.primary.sql`create extension if not exists pg_stat_statements`;
    await replica.caughtUp();
    const stakers = await citizenStakers(indexer.indexer.database.db);
    const paths = [
      ...stakers.map((wallet) => `/v1/staking/citizens/s1/1?address=${wallet}`),
      ...stakers.map((wallet) => listingPath(wallet)),
      ...Array.from({ length: 20 }, (_, limit) => `${listingPath(WALLET)}&limit=${limit + 1}`),
    ];
    // Once to fill the response cache, then again: a cached body costs its token check alone.
    const requests = [...paths, ...paths];
    const [standbyBefore, primaryBefore] = [
      await statementCalls(replica.server.sql),
      await statementCalls(cluster.primary.sql),
    ];
    for (const path of requests) expect((await get(path)).status).toBeLessThan(500);
    const [standbyAfter, primaryAfter] = [
      await statementCalls(replica.server.sql),
      await statementCalls(cluster.primary.sql),
    ];
    const standbyRan = callsSince(standbyBefore, standbyAfter);
    const perRequest = standbyRan.filter((row) => row.query.includes("api_tokens"));
    // Everything else run there is the poll of the standby's data version (replica-watch.ts),
    // and postgres.js's read of the array types when it opens a connection (pg_catalog).
    const others = standbyRan.filter((row) => !row.query.includes("api_tokens"));
    const polls = others
      .filter((row) => row.query.includes("data_version"))
      .reduce((sum, row) => sum + row.calls, 0);
    expect(
      others
        .filter((row) => !row.query.includes("data_version") && !row.query.includes("pg_catalog."))
        .map((row) => row.query),
    ).toEqual([]);
    const statements = perRequest.reduce((sum, row) => sum + row.calls, 0);
    console.log(
      `${requests.length} requests: ${statements} statements on the standby, ${polls} polls of its version`,
    );
    expect(statements).toBe(requests.length);
    // On the primary, the API only records token use (at most one write per flush).
    const primaryRan = callsSince(primaryBefore, primaryAfter).filter((row) =>
      row.query.includes("api_tokens"),
    );
    expect(primaryRan.every((row) => /^update "api_tokens" set last_used_at/.test(row.query))).toBe(
      true,
    );
    await Bun.sleep(2 * USAGE_FLUSH_MS);
    const [row] = await indexer.indexer.database.db.execute<{ used: boolean }>(
      sql`select last_used_at is not null as used from api_tokens where id = ${api.tokenId}`,
    );
    expect(row?.used).toBe(true);
  });

  test(
    "paused replay: answers, ETags, the stream and /readyz stay at the standby's block; a revocation still holds",
    async () => {
      // A second token, its stream open: revoked on the primary while the standby is paused.
      const doomed = await createToken(api.db, "revoked while the standby is paused");
      await replica.caughtUp();
      expect((await get(listingPath(WALLET), {}, doomed.token)).status).toBe(200);
      const doomedStream = await openStream(
        `${base}/v1/staking/citizens/stream?address=${WALLET}`,
        {
          authorization: `Bearer ${doomed.token}`,
        },
      );
      const stream = await openStream(`${base}/v1/staking/citizens/stream?address=${WALLET}`, {
        authorization: `Bearer ${api.token}`,
      });
      expect(stream.status).toBe(200);
      await stream.until((events) => lastSynced(events) >= 0);

      await replica.caughtUp();
      await replica.pauseReplay();
      const before = await indexer.waitForHead();
      // The standby's last state: read after the pause, so no write of the indexer's falls between.
      const first = await get(listingPath(WALLET));
      expect(first.status).toBe(200);
      expect(first.headers.get("x-indexed-block")).toBe(String(before));
      const etag = first.headers.get("etag")!;
      const body = await first.text();
      await stream.until((events) => lastSynced(events) >= Number(before));

      // The primary moves on, with changes to WALLET the standby does not replay.
      await actions.mine([actions.stake(WALLET, 2, 60_002n)]);
      await actions.mine([actions.stake(WALLET, 1, 60_003n)]);
      await actions.mine([]);
      const ahead = await indexer.waitForHead();
      expect(ahead).toBeGreaterThanOrEqual(before + 3n);
      expect(await chainHolding(WALLET, ahead)).not.toEqual(await chainHolding(WALLET, before));

      // Several of the standby's polls later, nothing has moved.
      await Bun.sleep(10 * POLL_MS);
      const paused = await get(listingPath(WALLET));
      expect(paused.status).toBe(200);
      expect(paused.headers.get("x-indexed-block")).toBe(String(before));
      expect(paused.headers.get("etag")).toBe(etag);
      expect(await paused.text()).toBe(body);
      const revalidated = await get(listingPath(WALLET), { "if-none-match": etag });
      expect(revalidated.status).toBe(304);
      expect(revalidated.headers.get("x-indexed-block")).toBe(String(before));
      // A block the primary has but the standby does not is beyond what the answer can hold.
      const beyond = await get(`${listingPath(WALLET)}&block=${ahead}`);
      expect(beyond.status).toBe(400);
      expect(beyond.headers.get("x-indexed-block")).toBe(String(before));
      expect(
        stream.events.every((event) => (event.data as { block: number }).block <= before),
      ).toBe(true);
      // A stream opened now announces the standby's block, and starts from its rows.
      const late = await openStream(`${base}/v1/staking/citizens/stream?address=${WALLET}`, {
        authorization: `Bearer ${api.token}`,
      });
      expect(late.headers.get("x-indexed-block")).toBe(String(before));
      await late.until((events) => lastSynced(events) >= 0);
      expect(lastSynced(late.events)).toBe(Number(before));

      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      const readiness = (await ready.json()) as { reasons: string[]; replicaLagBlocks: number };
      expect(readiness.replicaLagBlocks).toBe(Number(ahead - before));
      expect(readiness.reasons).toContain(
        `the read replica (DATABASE_READ_URL) is ${ahead - before} blocks behind the primary (at most ${READY_MAX_LAG_BLOCKS})`,
      );

      // Revoked on the primary; the standby still holds the token as valid.
      expect(await revokeToken(api.db, doomed.id)).toBe(true);
      const [standbyRow] = await standby<{ revoked: boolean }[]>`
      select revoked_at is not null as revoked from api_tokens where id = ${doomed.id}`;
      expect(standbyRow?.revoked).toBe(false);
      const refusedBy = Date.now() + LOADED_MACHINE_MS;
      let refused = await get(listingPath(WALLET), {}, doomed.token);
      while (refused.status === 200 && Date.now() < refusedBy) {
        await Bun.sleep(10);
        refused = await get(listingPath(WALLET), {}, doomed.token);
      }
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { detail: string }).detail).toBe(
        "this token has been revoked",
      );
      const endedBy = Date.now() + LOADED_MACHINE_MS;
      while (!doomedStream.ended && Date.now() < endedBy) await Bun.sleep(10);
      expect(doomedStream.ended).toBe(true);
      // A token made now is unknown to the standby until it replays it.
      const fresh = await createToken(api.db, "made while the standby is paused");
      expect((await get(listingPath(WALLET), {}, fresh.token)).status).toBe(401);

      // Replay resumes: the answers, the ETag and the stream move on to the primary's block.
      await replica.resumeReplay();
      await replica.caughtUp();
      const movedBy = Date.now() + LOADED_MACHINE_MS;
      let moved = await get(listingPath(WALLET));
      while (moved.headers.get("x-indexed-block") !== String(ahead) && Date.now() < movedBy) {
        await Bun.sleep(20);
        moved = await get(listingPath(WALLET));
      }
      expect(moved.headers.get("x-indexed-block")).toBe(String(ahead));
      expect(moved.headers.get("etag")).not.toBe(etag);
      const { items } = (await moved.json()) as { items: Record_[] };
      expect(apiHolding(items)).toEqual(await chainHolding(WALLET, ahead));
      expect((await get(listingPath(WALLET), { "if-none-match": etag })).status).toBe(200);
      expect((await get(listingPath(WALLET), {}, fresh.token)).status).toBe(200);
      expect((await get(listingPath(WALLET), {}, doomed.token)).status).toBe(401);
      await stream.until((events) => lastSynced(events) >= Number(ahead));
      await late.until((events) => lastSynced(events) >= Number(ahead));
      expect(await expectEverySyncedTrue(stream, WALLET)).toBeGreaterThanOrEqual(2);
      expect(await expectEverySyncedTrue(late, WALLET)).toBeGreaterThanOrEqual(2);
      stream.close();
      late.close();
      const readyAgain = await fetch(`${base}/readyz`);
      expect(readyAgain.status).toBe(200);
      expect(await readyAgain.json()).toMatchObject({ ready: true, replicaLagBlocks: 0 });
    },
    4 * LOADED_MACHINE_MS,
  );

  test(
    "a stream resumed from an instance ahead of the standby waits for it, never going back",
    async () => {
      const onPrimary = await createApiHarness({ databaseUrl: indexer.database.url });
      const server = onPrimary.app.listen({ hostname: "127.0.0.1", port: 0 });
      const streamFrom = (at: string, lastEventId?: string) =>
        openStream(`${at}/v1/staking/citizens/stream?address=${WALLET}`, {
          authorization: `Bearer ${onPrimary.token}`,
          ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }),
        });
      try {
        // The token is the primary instance's: the standby needs it too.
        await replica.caughtUp();
        const first = await streamFrom(`http://127.0.0.1:${server.server?.port}`);
        await first.until((events) => lastSynced(events) >= 0);
        await replica.pauseReplay();
        const before = await indexer.waitForHead();
        await actions.mine([actions.stakeBytes(WALLET, 1, 60_001n, 5n * BYTE)]);
        await actions.mine([]);
        const ahead = await indexer.waitForHead();
        await first.until((events) => lastSynced(events) >= Number(ahead));
        first.close();
        expect(await chainHolding(WALLET, ahead)).not.toEqual(await chainHolding(WALLET, before));

        // Resumed on the standby's instance, still at `before`: nothing is sent, not even a reset.
        const resumed = await streamFrom(base, first.lastEventId);
        expect(resumed.status).toBe(200);
        expect(resumed.headers.get("x-indexed-block")).toBe(String(before));
        await Bun.sleep(10 * POLL_MS);
        expect(resumed.events).toEqual([]);
        await replica.resumeReplay();
        await resumed.until((events) => lastSynced(events) >= Number(ahead));
        expect(resumed.events.map((event) => event.event)).not.toContain("reset");
        expect(
          resumed.events.every((event) => (event.data as { block: number }).block >= ahead),
        ).toBe(true);
        const held = assemble(resumed.events, assemble(first.events));
        expect(apiHolding(held.values())).toEqual(
          await chainHolding(WALLET, BigInt(lastSynced(resumed.events))),
        );
        resumed.close();
      } finally {
        await replica.resumeReplay();
        await server.stop(true);
        await onPrimary.close();
      }
    },
    4 * LOADED_MACHINE_MS,
  );

  test(
    "the API process reads DATABASE_READ_URL, and refuses a standby as DATABASE_URL",
    async () => {
      const env = {
        DATABASE_URL: indexer.database.url,
        DATABASE_READ_URL: standbyUrl,
        REDIS_URL: indexer.redis.url,
        QUEUE_PREFIX: indexer.redis.prefix,
        RPC_URL: undefined,
        LOG_LEVEL: "info",
      };
      const port = await freePort();
      const process_ = startCommand(["api/main.ts"], { ...env, PORT: String(port) });
      try {
        await process_.waitForLine(/"msg":"listening"/, 2 * LOADED_MACHINE_MS);
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        expect(await ready.json()).toMatchObject({ primary: "ok", replicaLagBlocks: 0 });
      } finally {
        expect(await process_.stop()).toBe(0);
      }

      const wrong = startCommand(["api/main.ts"], {
        ...env,
        DATABASE_URL: standbyUrl,
        PORT: String(await freePort()),
      });
      const code = await wrong.child.exited;
      await wrong.stop();
      expect(code).toBe(2);
      expect(wrong.lines.join("\n")).toContain(
        "is a hot standby (in recovery): the API writes token use and LISTENs for revocations there",
      );
    },
    4 * LOADED_MACHINE_MS,
  );
});
