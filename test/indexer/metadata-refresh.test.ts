/**
 * `refresh-metadata`: every citizen's tokenURI read again at the head, what changed kept, and a
 * tokenURI that no longer reads at the head never wiping the name the citizen was indexed with.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, count, eq } from "drizzle-orm";
import type { Address } from "viem";
import { s1CitizenAbi } from "../../contracts/generated/index.ts";
import { citizens, readFailures, stakedCitizens } from "../../db/schema.ts";
import { parseTokenMetadata } from "../../indexer/project/metadata.ts";
import { type ScenarioDevnet, startScenarioDevnet } from "../support/devnet.ts";
import { indexDevnet, type TestIndexer } from "../support/indexer.ts";
import { stakingActions } from "../support/staking.ts";

const WALLET: Address = "0x000000000000000000000000000000000000fe11";
/** Indexed readable, then reverts at the head. */
const STARTS_REVERTING = 60_001n;
/** Indexed with malformed JSON (fallback name, a read failure), then mended. */
const MENDED = 60_002n;
/** Readable throughout. */
const UNCHANGED = 60_003n;

let devnet: ScenarioDevnet;
let harness: TestIndexer;
let actions: ReturnType<typeof stakingActions>;

const stored = async (id: bigint) => {
  const db = harness.indexer.database.db;
  const [citizen] = await db
    .select({ name: citizens.name, image: citizens.image })
    .from(citizens)
    .where(and(eq(citizens.season, 1), eq(citizens.citizenId, id)));
  const [served] = await db
    .select({ name: stakedCitizens.name, image: stakedCitizens.image })
    .from(stakedCitizens)
    .where(and(eq(stakedCitizens.season, 1), eq(stakedCitizens.citizenId, id)));
  const [failures] = await db
    .select({ n: count() })
    .from(readFailures)
    .where(and(eq(readFailures.season, 1), eq(readFailures.citizenId, id)));
  return { citizen, served, failures: failures?.n };
};

/** What the citizen's own tokenURI says at the head: the oracle. */
const onChain = async (id: bigint) => {
  const uri = await devnet.client.readContract({
    address: devnet.deployment.addresses.s1Citizen,
    abi: s1CitizenAbi,
    functionName: "tokenURI",
    args: [id],
  });
  const { name, image } = parseTokenMetadata(uri);
  return { name: name ?? null, image: image ?? null };
};

beforeAll(async () => {
  devnet = await startScenarioDevnet({ events: 60, seed: "metadata-refresh" });
  actions = stakingActions(devnet.client, devnet.deployment);
  await actions.wallet(WALLET);
  const ids = [STARTS_REVERTING, MENDED, UNCHANGED];
  await actions.mine(ids.map((id) => actions.mintS1(WALLET, id)));
  await actions.mine([actions.setMetadataFault(1, MENDED, 6)]);
  await actions.mine(ids.map((id) => actions.stake(WALLET, 1, id)));
  harness = await indexDevnet(devnet, {
    label: "metadata_refresh",
    to: await devnet.client.getBlockNumber(),
  });
});

afterAll(async () => {
  await harness?.cleanup();
  await devnet?.stop();
});

describe("refresh-metadata", () => {
  test("keeps what changed, clears a mended failure, and never wipes a name on a revert", async () => {
    const before = {
      reverting: await stored(STARTS_REVERTING),
      mended: await stored(MENDED),
      unchanged: await stored(UNCHANGED),
    };
    expect(before.reverting.citizen).toEqual(await onChain(STARTS_REVERTING));
    expect(before.reverting.citizen?.name).toBeString();
    expect(before.mended).toMatchObject({ citizen: { name: null }, failures: 1 });

    await actions.mine([
      actions.setMetadataFault(1, STARTS_REVERTING, 2),
      actions.setMetadataFault(1, MENDED, 0),
    ]);
    const [{ n: citizenCount }] = (await harness.indexer.database.db
      .select({ n: count() })
      .from(citizens)) as [{ n: number }];

    const result = await harness.cli(["refresh-metadata"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `for ${citizenCount} citizens: 1 changed, 1 unreadable at the head (kept as stored)`,
    );

    const mended = await stored(MENDED);
    expect(mended.citizen).toEqual(await onChain(MENDED));
    expect(mended.citizen?.name).toBeString();
    expect(mended.served).toEqual(mended.citizen);
    expect(mended.failures).toBe(0);
    // Reverting at the head says nothing of the citizen indexed before: its name stays.
    expect(await stored(STARTS_REVERTING)).toEqual(before.reverting);
    expect(await stored(UNCHANGED)).toEqual(before.unchanged);
    expect(await harness.mismatches([WALLET])).toEqual([]);

    // A second refresh finds nothing new.
    const again = await harness.cli(["refresh-metadata"]);
    expect(again.stdout).toContain(`: 0 changed, 1 unreadable`);
  });
});
