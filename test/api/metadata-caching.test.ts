/**
 * An as-of answer at a final block carries the citizen's current name and image, so it is never
 * immutable: after the citizen's metadata changes on chain and `refresh-metadata` keeps it, the
 * same URL has a new ETag, the old one gets a 200 with the new metadata, and no instance's
 * response cache serves the old body.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { Address } from "viem";
import { s1CitizenAbi } from "../../contracts/generated/index.ts";
import { citizens, indexerCheckpoints } from "../../db/schema.ts";
import { parseTokenMetadata } from "../../indexer/project/metadata.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";
import { createApiHarness } from "./support.ts";

const WALLET: Address = "0x000000000000000000000000000000000000ca5e";
/** Indexed with malformed metadata (the fallback name), then mended on chain. */
const CITIZEN = 61_001n;
/** contracts/src/CitizenMetadata.sol: MALFORMED_JSON. */
const MALFORMED_JSON = 6;

let devnet: ScenarioDevnet;
let harness: TestIndexer;
let actions: ReturnType<typeof stakingActions>;
let stakeBlock: bigint;
const instances: Awaited<ReturnType<typeof createApiHarness>>[] = [];
const servers: ReturnType<Awaited<ReturnType<typeof createApiHarness>>["app"]["listen"]>[] = [];
let bases: string[];

beforeAll(async () => {
  devnet = await startScenarioDevnet({ events: 60, seed: "metadata-caching" });
  actions = stakingActions(devnet.client, devnet.deployment);
  await actions.wallet(WALLET);
  await actions.mine([actions.mintS1(WALLET, CITIZEN)]);
  await actions.mine([actions.setMetadataFault(1, CITIZEN, MALFORMED_JSON)]);
  await actions.mine([actions.stake(WALLET, 1, CITIZEN)]);
  stakeBlock = await devnet.client.getBlockNumber();
  // The follower reports the finality boundary (the head, at the test indexer's depth 0).
  harness = await indexDevnet(devnet, { label: "metadata_caching", follow: true });
  const db = harness.indexer.database.db;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [checkpoint] = await db.select().from(indexerCheckpoints);
    if ((checkpoint?.finalizedBlock ?? -1n) >= stakeBlock) break;
    if (Date.now() > deadline) throw new Error("the follower never reported the boundary");
    await Bun.sleep(50);
  }
  // Two instances on one database, each with its own response cache.
  for (let index = 0; index < 2; index++) {
    const api = await createApiHarness({ databaseUrl: harness.database.url });
    instances.push(api);
    servers.push(api.app.listen({ hostname: "127.0.0.1", port: 0 }));
  }
  bases = servers.map(({ server }) => `http://127.0.0.1:${server!.port}`);
});

afterAll(async () => {
  for (const server of servers) await server.stop();
  for (const api of instances) await api.close();
  await harness?.cleanup();
  await devnet?.stop();
});

/** The citizen's metadata as its tokenURI says at the head: the oracle. */
const onChainMetadata = async () => {
  const uri = await devnet.client.readContract({
    address: devnet.deployment.addresses.s1Citizen,
    abi: s1CitizenAbi,
    functionName: "tokenURI",
    args: [CITIZEN],
  });
  const { name, image } = parseTokenMetadata(uri);
  return { name, image };
};

describe("as-of answers after a metadata change", () => {
  test("the ETag moves, the old one gets a 200 with the new metadata, and no cache serves the old body", async () => {
    const token = instances[0]!.token;
    const paths = [
      `/v1/staking/citizens/s1/${CITIZEN}?address=${WALLET}&block=${stakeBlock}`,
      `/v1/staking/citizens?address=${WALLET}&block=${stakeBlock}`,
    ];
    const get = (base: string, path: string, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
    type Metadata = { name?: string; image?: string };
    const metadataIn = (body: unknown): Metadata => {
      const record = ((body as { items?: Metadata[] }).items?.[0] ?? body) as Metadata;
      return { name: record.name, image: record.image };
    };

    const before = new Map<string, { etag: string; metadata: Metadata }>();
    for (const path of paths) {
      for (const base of bases) {
        // Twice on each instance: the second is served from its warm cache.
        for (let round = 0; round < 2; round++) {
          const response = await get(base, path);
          expect(response.status).toBe(200);
          expect(response.headers.get("x-as-of-block")).toBe(String(stakeBlock));
          // The body holds today's metadata, which refresh-metadata may change.
          expect(response.headers.get("cache-control")).toBe("private, no-cache");
          const seen = {
            etag: response.headers.get("etag")!,
            metadata: metadataIn(await response.json()),
          };
          expect(before.get(path) ?? seen).toEqual(seen);
          before.set(path, seen);
        }
        const unchanged = await get(base, path, { "if-none-match": before.get(path)!.etag });
        expect(unchanged.status).toBe(304);
      }
    }

    await actions.mine([actions.setMetadataFault(1, CITIZEN, 0)]);
    // The fallback name and no image before; the tokenURI's name and image now.
    const metadata = await onChainMetadata();
    expect(metadata.name).toBeString();
    expect(metadata.image).toStartWith("https://");
    expect(metadata).not.toEqual(before.get(paths[0]!)!.metadata);
    const refresh = await harness.cli(["refresh-metadata"]);
    expect(refresh.code).toBe(0);
    const [stored] = await harness.indexer.database.db
      .select({ name: citizens.name, image: citizens.image })
      .from(citizens)
      .where(and(eq(citizens.season, 1), eq(citizens.citizenId, CITIZEN)));
    expect(stored).toEqual({ name: metadata.name ?? null, image: metadata.image ?? null });

    for (const path of paths) {
      const old = before.get(path)!;
      for (const base of bases) {
        const revalidated = await get(base, path, { "if-none-match": old.etag });
        expect(revalidated.status).toBe(200);
        const etag = revalidated.headers.get("etag")!;
        expect(etag).not.toBe(old.etag);
        expect(metadataIn(await revalidated.json())).toEqual(metadata);
        const plain = await get(base, path);
        expect(metadataIn(await plain.json())).toEqual(metadata);
        expect((await get(base, path, { "if-none-match": etag })).status).toBe(304);
      }
    }
  });
});
