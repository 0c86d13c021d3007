/**
 * The dashboard client (client/) against a real API on an indexed devnet: typed calls with ETags,
 * the live map through a connection cut by a TCP proxy and through a reorg, the stream bound's
 * 429 waited out, and a revoked token's error.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Address } from "viem";
import { createStakingClient } from "../../client/index.ts";
import type { Change, LiveCitizens } from "../../client/live-citizens.ts";
import { ApiProblem } from "../../client/problem.ts";
import type { CitizenPage, S1Citizen } from "../../client/types.ts";
import { createToken, revokeToken } from "../../db/tokens.ts";
import { createApiHarness } from "../api/support.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";
import { startTcpProxy } from "../support/tcp-proxy.ts";

const WALLET: Address = "0x00000000000000000000000000000000000c1e47";
const BYTE = 10n ** 18n;
const FOLLOW_INTERVAL_MS = 50;
/** A change reaches the client within a few follow intervals; the margin is for a loaded host. */
const CHANGE_BOUND_MS = 200 * FOLLOW_INTERVAL_MS;

type Harness = Awaited<ReturnType<typeof createApiHarness>>;

async function until(
  what: string,
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = CHANGE_BOUND_MS,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await Bun.sleep(20);
  }
}

describe("the dashboard client on a devnet", () => {
  let devnet: ScenarioDevnet;
  let indexer: IndexedDevnet;
  let actions: ReturnType<typeof stakingActions>;
  let api: Harness;
  let server: ReturnType<Harness["app"]["listen"]>;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let base: string;
  let stakeBlock: bigint;
  const requests: { url: string; status: number; ifNoneMatch: string | null }[] = [];

  const clientWith = (token: string) =>
    createStakingClient({
      baseUrl: base,
      token,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        requests.push({
          url: input.toString(),
          status: response.status,
          ifNoneMatch: new Headers(init?.headers).get("if-none-match"),
        });
        return response;
      },
    });

  /** The wallet's citizens as the API's listing serves them now. */
  const listing = async () => {
    const response = await api.request(`/v1/staking/citizens?address=${WALLET}&limit=100`);
    const { items } = (await response.json()) as CitizenPage;
    return new Map(items.map((item) => [`${item.type}:${item.id}`, item]));
  };

  /** Waits until the live map has reached the indexed head and equals the listing. */
  const settled = async (live: LiveCitizens) => {
    const head = Number(await indexer.waitForHead());
    await until("the live map reaches the head", () => (live.block ?? -1) >= head);
    expect(new Map(live.citizens)).toEqual(await listing());
  };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 120, seed: "client" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
    await actions.mine([
      actions.mintS1(WALLET, 60_001n),
      actions.mintS2(WALLET, 60_002n),
      actions.mintS1(WALLET, 60_003n),
      actions.mintS1(WALLET, 60_004n),
      actions.mintS2(WALLET, 60_005n),
    ]);
    stakeBlock = await actions.mine([
      actions.stake(WALLET, 1, 60_001n),
      actions.stake(WALLET, 2, 60_002n),
    ]);
    indexer = await indexDevnet(devnet, {
      label: "client",
      options: { followIntervalMs: FOLLOW_INTERVAL_MS, finalityDepth: undefined },
      follow: true,
    });
    api = await createApiHarness({
      databaseUrl: indexer.database.url,
      // One stream per token, so the bound's 429 is reachable; a short keep-alive makes the
      // server notice a cut connection (and free its slot) quickly.
      settings: { stream: { maxPerToken: 1, keepAliveMs: 250 } },
    });
    server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
    proxy = await startTcpProxy({ host: "127.0.0.1", port: server.server!.port! });
    base = `http://127.0.0.1:${proxy.port}`;
  });

  afterAll(async () => {
    await proxy?.stop();
    await server?.stop(true);
    await api?.close();
    await indexer?.cleanup();
    await devnet?.stop();
  });

  test("typed calls answer what the API serves, conditionally, and failures are ApiProblems", async () => {
    const client = clientWith(api.token);
    const s1 = await client.citizen("s1", 60_001n, WALLET);
    expect(s1.type).toBe("s1");
    expect(s1.id).toBe("60001");
    expect(s1.identity.creditYield).toBeString();
    const served = await api.request(`/v1/staking/citizens/s1/60001?address=${WALLET}`);
    expect(s1).toEqual((await served.json()) as S1Citizen);

    const page = await client.list(WALLET, { sort: "totalPoints", order: "desc" });
    expect(page.items.map((item) => `${item.type}:${item.id}`).sort()).toEqual([
      "s1:60001",
      "s2:60002",
    ]);
    expect(page.nextCursor).toBeNull();
    const all = await client.listAll(WALLET);
    expect(new Map(all.map((item) => [`${item.type}:${item.id}`, item]))).toEqual(await listing());

    // Asked again: If-None-Match goes out, a 304 comes back, the kept body is returned.
    requests.length = 0;
    const again = await client.citizen("s1", 60_001n, WALLET);
    expect(again).toEqual(s1);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.status).toBe(304);
    expect(requests[0]!.ifNoneMatch).toStartWith('"');

    // As of a past block (?block=): the block before the stakes, then theirs.
    const before = await client.list(WALLET, { block: stakeBlock - 1n });
    expect(before.items).toEqual([]);
    const at = await client.list(WALLET, { block: stakeBlock });
    expect(at.items).toHaveLength(2);

    const notStaked = await client.citizen("s1", 60_003n, WALLET).catch((error) => error);
    expect(notStaked).toBeInstanceOf(ApiProblem);
    expect(notStaked.name).toBe("ApiProblem");
    expect(notStaked.status).toBe(404);
    expect(notStaked.type).toEndWith("/citizen-not-staked");

    const badAddress = await client.list("0x12").catch((error) => error);
    expect(badAddress).toBeInstanceOf(ApiProblem);
    expect(badAddress.status).toBe(400);
    expect(badAddress.parameter).toBe("address");
  }, 60_000);

  test("the live map: a dropped stream resumes without loss or repeats, and a reorg is corrected", async () => {
    const client = clientWith(api.token);
    const changes: Change[] = [];
    const live = client.watch(WALLET, { onChange: (_, change) => changes.push(change) });
    await live.ready;
    expect([...live.citizens.keys()].sort()).toEqual(["s1:60001", "s2:60002"]);
    await settled(live);
    const held = live.citizens;

    await actions.mine([actions.stake(WALLET, 1, 60_003n)]);
    await until("the new stake arrives", () => live.citizens.has("s1:60003"));
    await settled(live);

    // The connection drops; meanwhile a deposit and a new stake are indexed.
    proxy.cut();
    const batchesBeforeCut = changes.length;
    await actions.mine([actions.stakeBytes(WALLET, 1, 60_001n, 40n * BYTE)]);
    await actions.mine([actions.stake(WALLET, 2, 60_005n)]);
    await indexer.waitForHead();
    expect(live.citizens.has("s2:60005")).toBe(false);
    proxy.restore();
    await settled(live);
    expect(live.connections).toBeGreaterThanOrEqual(2);
    expect(live.citizens).toBe(held);
    // The resume sent exactly the two changes, once each, in one batch, without a reset.
    const resumed = changes.slice(batchesBeforeCut);
    expect(resumed.flatMap((change) => change.updated).sort()).toEqual(["s1:60001", "s2:60005"]);
    expect(resumed.flatMap((change) => change.removed)).toEqual([]);
    expect(resumed.some((change) => change.reset)).toBe(false);
    expect(live.citizens.get("s1:60001")?.bytes).toEqual({ staked: 40, points: 20 });

    // A stake a reorg takes back: it arrives, then its removal.
    await actions.mine([actions.stake(WALLET, 1, 60_004n)]);
    await actions.mine([]);
    await until("the stake to be taken back arrives", () => live.citizens.has("s1:60004"));
    const beforeReorg = changes.length;
    await actions.reorg(2);
    await actions.mine([]);
    await until("the reorg's correction arrives", () => !live.citizens.has("s1:60004"));
    await settled(live);
    expect(changes.slice(beforeReorg).flatMap((change) => change.removed)).toContain("s1:60004");
    expect(await indexer.mismatches([WALLET])).toEqual([]);
    live.close();
    await live.done;
  }, 120_000);

  test("a resume the server cannot place gets a reset: the map is emptied and refilled", async () => {
    const client = clientWith(api.token);
    const head = Number(await indexer.waitForHead());
    // What a client held before a reorg took its block back: a block beyond the indexed one,
    // and a citizen the wallet does not hold.
    const stale = new Map(await listing());
    const gone = { ...stale.get("s2:60002")!, id: "99999" };
    stale.set("s2:99999", gone);
    const changes: Change[] = [];
    const live = client.watch(WALLET, {
      lastEventId: String(head + 1_000),
      citizens: stale,
      onChange: (_, change) => changes.push(change),
    });
    await live.ready;
    expect(changes[0]!.reset).toBe(true);
    expect(live.citizens).toBe(stale);
    expect(live.citizens.has("s2:99999")).toBe(false);
    await settled(live);
    live.close();
    await live.done;
  }, 60_000);

  test("a call beyond the rate limit waits for Retry-After and then answers", async () => {
    // A short window, so the wait is seconds, not the rest of a minute.
    const windowMs = 4_000;
    const limited = await createApiHarness({
      databaseUrl: indexer.database.url,
      settings: { rateLimitPerMinute: 2, rateLimitWindowMs: windowMs },
    });
    const limitedServer = limited.app.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const statuses: number[] = [];
      const client = createStakingClient({
        baseUrl: `http://127.0.0.1:${limitedServer.server!.port}`,
        token: limited.token,
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          statuses.push(response.status);
          return response;
        },
      });
      // Windows are fixed: start just after one begins, so all three calls fall in it.
      await Bun.sleep(windowMs - (Date.now() % windowMs) + 50);
      await client.list(WALLET);
      await client.list(WALLET, { type: "s1" });
      const refusedAt = Date.now();
      const third = await client.list(WALLET, { type: "s2" });
      const waited = Date.now() - refusedAt;
      const s2 = [...(await listing()).values()].filter((item) => item.type === "s2");
      expect(third.items).toEqual(s2);
      expect(s2.length).toBeGreaterThan(0);
      expect(statuses.slice(0, 3)).toEqual([200, 200, 429]);
      expect(statuses.at(-1)).toBe(200);
      // Retry-After is the window's rest rounded up to whole seconds: the wait outlasted the window.
      expect(waited).toBeGreaterThanOrEqual(windowMs - (refusedAt % windowMs));
    } finally {
      await limitedServer.stop(true);
      await limited.close();
    }
  }, 30_000);

  test("a stream beyond the token's bound waits out its 429 and starts once a slot frees", async () => {
    const client = clientWith(api.token);
    const first = client.watch(WALLET);
    await first.ready;
    const second = client.watch(WALLET);
    await until("the second stream is refused at least once", () => second.connections >= 2);
    expect(second.block).toBeUndefined();
    expect(
      requests.some((request) => request.url.includes("/stream") && request.status === 429),
    ).toBe(true);
    first.close();
    await second.ready;
    expect(new Map(second.citizens)).toEqual(await listing());
    second.close();
    await Promise.all([first.done, second.done]);
  }, 60_000);

  test("a revoked token: calls throw 401 and the live map ends with it on its next connection", async () => {
    const { token, id } = await createToken(api.db, "revoked");
    const client = clientWith(token);
    const errors: ApiProblem[] = [];
    const live = client.watch(WALLET, { onError: (error) => errors.push(error) });
    await live.ready;
    expect(await revokeToken(api.db, id)).toBe(true);

    const refused = await client.list(WALLET).catch((error) => error);
    expect(refused).toBeInstanceOf(ApiProblem);
    expect(refused.status).toBe(401);
    expect(refused.type).toEndWith("/unauthorized");

    // Tokens are checked when a stream opens: a drop makes the client reconnect, and fail.
    proxy.cut();
    proxy.restore();
    const ended = await live.done.then(
      () => undefined,
      (error) => error,
    );
    expect(ended).toBeInstanceOf(ApiProblem);
    expect(ended.status).toBe(401);
    expect(errors).toEqual([ended]);
  }, 60_000);
});
