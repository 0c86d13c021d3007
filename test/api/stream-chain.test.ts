import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Address } from "viem";
import { DAY } from "../../devnet/settings.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { type IndexedDevnet, indexDevnet } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";
import { assemble, openStream, type StreamEvent } from "./stream-client.ts";
import { createApiHarness } from "./support.ts";

const WALLET: Address = "0x00000000000000000000000000000000005e1f00";
const BYTE = 10n ** 18n;

type Harness = Awaited<ReturnType<typeof createApiHarness>>;

/**
 * A dashboard's stream over real HTTP, with two API instances on one database while a follower
 * indexes transactions made on anvil: every change arrives, a reconnect to the other instance
 * with Last-Event-ID gets exactly the changes it missed, and a reorg's correction arrives too.
 */
describe("the live stream follows the chain across instances", () => {
  let devnet: ScenarioDevnet;
  let indexer: IndexedDevnet;
  let actions: ReturnType<typeof stakingActions>;
  const instances: { api: Harness; base: string; stop: () => Promise<void> }[] = [];

  const streamFrom = (instance: number, lastEventId?: string) =>
    openStream(`${instances[instance]!.base}/v1/staking/citizens/stream?address=${WALLET}`, {
      authorization: `Bearer ${instances[0]!.api.token}`,
      ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }),
    });

  /** The wallet's citizens as the listing serves them, keyed as the stream assembles them. */
  const listing = async () => {
    const response = await instances[1]!.api.request(
      `/v1/staking/citizens?address=${WALLET}&limit=100`,
    );
    const { items } = (await response.json()) as { items: { type: string; id: string }[] };
    return new Map(items.map((item) => [`${item.type}:${item.id}`, item]));
  };

  const keysOf = (events: StreamEvent[], name: string) =>
    events
      .filter((event) => event.event === name)
      .map((event) => {
        const data = event.data as {
          type?: string;
          id?: string;
          citizen?: { type: string; id: string };
        };
        return data.citizen ? `${data.citizen.type}:${data.citizen.id}` : `${data.type}:${data.id}`;
      });

  const lastSynced = (events: StreamEvent[]) =>
    events.filter((event) => event.event === "synced").at(-1)?.data as
      | { block: number }
      | undefined;

  /** Waits until the stream has sent a `synced` at or after the indexer's current head. */
  const caughtUp = async (client: Awaited<ReturnType<typeof streamFrom>>) => {
    const head = await indexer.waitForHead();
    await client.until((events) => (lastSynced(events)?.block ?? -1) >= Number(head));
  };

  beforeAll(async () => {
    devnet = await startScenarioDevnet({ events: 200, seed: "stream" });
    actions = stakingActions(devnet.client, devnet.deployment);
    await actions.wallet(WALLET);
    await actions.mine([
      actions.mintS1(WALLET, 50_001n),
      actions.mintS2(WALLET, 50_002n),
      actions.mintS1(WALLET, 50_003n),
      actions.mintS1(WALLET, 50_004n),
    ]);
    indexer = await indexDevnet(devnet, {
      label: "stream",
      options: { followIntervalMs: 50, finalityDepth: undefined },
      follow: true,
    });
    for (let index = 0; index < 2; index++) {
      const api = await createApiHarness({ databaseUrl: indexer.database.url });
      const server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
      instances.push({
        api,
        base: `http://127.0.0.1:${server.server?.port}`,
        stop: async () => {
          await server.stop(true);
        },
      });
    }
  });

  afterAll(async () => {
    for (const instance of instances) {
      await instance.stop();
      await instance.api.close();
    }
    await indexer?.cleanup();
    await devnet?.stop();
  });

  test("live changes, a reconnect to the other instance, and a reorg's correction, each once", async () => {
    // Instance A: a new stream on a wallet with nothing staked yet.
    const first = await streamFrom(0);
    expect(first.status).toBe(200);
    await caughtUp(first);
    expect(keysOf(first.events, "citizen")).toEqual([]);

    await actions.mine([actions.stake(WALLET, 1, 50_001n)]);
    await caughtUp(first);
    await actions.mine([actions.stakeBytes(WALLET, 1, 50_001n, 150n * BYTE)]);
    await actions.mine([actions.stake(WALLET, 2, 50_002n)]);
    await caughtUp(first);
    expect(keysOf(first.events, "citizen")).toEqual(["s1:50001", "s1:50001", "s2:50002"]);
    const deposit = first.events.filter((event) => event.event === "citizen")[1]!.data as {
      citizen: { bytes: { staked: number; points: number } };
    };
    expect(deposit.citizen.bytes).toEqual({ staked: 150, points: 75 });
    expect(assemble(first.events)).toEqual(await listing());
    first.close();
    const resumeFrom = first.lastEventId!;
    expect(resumeFrom).toMatch(/^[0-9]+-0x[0-9a-f]{64}$/);

    // While nobody listens: a deposit, a withdrawal (after the timelock) and a new stake.
    await actions.mine([actions.stakeBytes(WALLET, 2, 50_002n, 3n * BYTE)]);
    await devnet.client.increaseTime({ seconds: Number(31n * DAY) });
    await actions.mine([]);
    await actions.mine([actions.withdraw(WALLET, 1, 50_001n), actions.stake(WALLET, 1, 50_003n)]);
    await indexer.waitForHead();

    // Instance B, resuming: exactly the three changes, once each.
    const second = await streamFrom(1, resumeFrom);
    expect(second.status).toBe(200);
    await caughtUp(second);
    expect(keysOf(second.events, "citizen").sort()).toEqual(["s1:50003", "s2:50002"]);
    expect(keysOf(second.events, "removed")).toEqual(["s1:50001"]);
    expect(second.events.filter((event) => event.event === "synced")).toHaveLength(1);
    const assembled = assemble(second.events, assemble(first.events));
    expect(assembled).toEqual(await listing());
    expect(await indexer.mismatches([WALLET])).toEqual([]);

    // A stake that a reorg takes back: the stream sends it, then its removal.
    await actions.mine([actions.stake(WALLET, 1, 50_004n)]);
    await actions.mine([]);
    await caughtUp(second);
    expect(keysOf(second.events, "citizen")).toContain("s1:50004");
    const beforeReorg = second.events.length;
    await actions.reorg(2);
    await actions.mine([]);
    await indexer.waitForHead();
    await second.until((events) =>
      keysOf(events.slice(beforeReorg), "removed").includes("s1:50004"),
    );
    await caughtUp(second);
    expect(keysOf(second.events.slice(beforeReorg), "citizen")).toEqual([]);
    assemble(second.events.slice(beforeReorg), assembled);
    expect(assembled.has("s1:50004")).toBe(false);
    expect(assembled).toEqual(await listing());
    expect(await indexer.mismatches([WALLET])).toEqual([]);
    second.close();

    // Away during a reorg that takes back a stake the client saw, while the chain grows past
    // the client's block again: its block's hash no longer matches, so it starts over.
    await actions.mine([actions.stake(WALLET, 1, 50_004n)]);
    await actions.mine([]);
    const third = await streamFrom(0, second.lastEventId);
    await caughtUp(third);
    expect(keysOf(third.events, "citizen")).toEqual(["s1:50004"]);
    third.close();
    const heldBefore = assemble(third.events, assembled);
    expect(heldBefore.has("s1:50004")).toBe(true);
    await actions.reorg(2);
    await actions.mine([]);
    await actions.mine([]);
    await indexer.waitForHead();
    const fourth = await streamFrom(1, third.lastEventId);
    await caughtUp(fourth);
    expect(fourth.events[0]?.event).toBe("reset");
    const rebuilt = assemble(fourth.events, heldBefore);
    expect(rebuilt.has("s1:50004")).toBe(false);
    expect(rebuilt).toEqual(await listing());
    expect(await indexer.mismatches([WALLET])).toEqual([]);
    fourth.close();
  }, 60_000);
});
