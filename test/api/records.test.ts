import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Static } from "elysia";
import { getSchemaValidator } from "elysia";
import { CitizenPage, S1Record, S2Record } from "../../api/modules/citizens/model.ts";
import { formatDuration, inferredFields, weiToBytes } from "../../api/modules/citizens/record.ts";
import type { StakedCitizen } from "../../db/schema.ts";
import { s1BasePoints } from "../../lib/vocabulary.ts";
import { citizenRow, createApiHarness, json, STAKER, type Wire } from "./support.ts";

type Page = Wire<Static<typeof CitizenPage>>;
type S1Body = Wire<S1Record>;
type S2Body = Wire<S2Record>;

let api: Awaited<ReturnType<typeof createApiHarness>>;

const validS1 = getSchemaValidator(S1Record);
const validS2 = getSchemaValidator(S2Record);
const validPage = getSchemaValidator(CitizenPage);

beforeAll(async () => {
  api = await createApiHarness({
    settings: { imageTemplateS2: "https://img.example/s2/{id}.png" },
  });
  await api.setCheckpoint(1234n);
  await api.insertCitizens([
    {
      season: 1,
      citizenId: 42n,
      name: "Citizen #42 named",
      image: "https://meta.example/42.png",
      isHand: true,
      creditYield: "High",
      identityPoints: 300n,
      vaultId: 77n,
      vaultCreditMultiplier: "?",
      vaultMultiplier: 150n,
      stakedVaultId: 77n,
      hasVault: true,
      timelockDuration: 108_000n,
      timelockMultiplier: 125n,
      timelockEndTime: 1_800_000_000n,
      stakedBytes: 1_500_000_000_000_000_000n,
      bytesPoints: 0n,
      totalPoints: 562n,
    },
    { season: 1, citizenId: 7n, image: "ipfs://not-http", stakedBytes: 1n, bytesPoints: 3n },
    {
      season: 2,
      citizenId: 42n,
      timelockDuration: 3_600n,
      timelockMultiplier: 150n,
      stakedBytes: 123_456_789_000_000_000_000n,
      bytesPoints: 61n,
      totalPoints: 211n,
    },
  ]);
});

afterAll(() => api.close());

describe("S1 record", () => {
  test("has every contract field, and validates against the S1 schema", async () => {
    const response = await api.request(`/v1/staking/citizens/s1/42?address=${STAKER}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-indexed-block")).toBe("1234");
    const body = await json<S1Body>(response);
    expect(body).toEqual({
      id: "42",
      type: "s1",
      name: "Citizen #42 named",
      image: "https://meta.example/42.png",
      itemCache: { id: 2042 },
      land: { id: 3042 },
      identity: { id: 1042, creditYield: "High", points: 300 },
      vault: { id: 77, creditMultiplier: "?", multiplier: 150 },
      isHand: true,
      stakedVaultId: 77,
      hasVault: true,
      timelock: {
        time: 108_000,
        multiplier: 125,
        endTime: 1_800_000_000,
        timeFormatted: "1 day 6 hours",
      },
      bytes: { staked: 1.5, points: 0 },
      totalPoints: 562,
    });
    expect(validS1.Check(body)).toBe(true);
    // The contract's invariant holds for what the API serves.
    expect(body.totalPoints).toBe(
      Math.floor(
        (body.identity.points * body.vault.multiplier * body.timelock.multiplier) / 10_000,
      ) + body.bytes.points,
    );
  });

  test("falls back to 'Citizen #id', no image for a non-http metadata image, 'None' without a vault", async () => {
    const body = await json<S1Body>(
      await api.request(`/v1/staking/citizens/s1/7?address=${STAKER}`),
    );
    expect(body.name).toBe("Citizen #7");
    expect("image" in body).toBe(false);
    expect(body.vault).toEqual({ id: 0, creditMultiplier: "None", multiplier: 100 });
    expect(body.bytes.staked).toBe(1e-18);
    expect(validS1.Check(body)).toBe(true);
  });
});

describe("numbers as the seed publishes them", () => {
  test("nested ids are JSON numbers with their exact digits, even beyond 2^53", async () => {
    const huge = 2n ** 64n + 7n;
    const vault = 2n ** 53n + 1n;
    await api.insertCitizens([
      {
        season: 1,
        citizenId: 900n,
        itemCacheId: huge,
        landDeedId: huge + 1n,
        identityId: huge + 2n,
        vaultId: vault,
        stakedVaultId: vault,
        hasVault: true,
      },
    ]);
    try {
      const text = await (
        await api.request(`/v1/staking/citizens/s1/900?address=${STAKER}`)
      ).text();
      expect(text).toContain(`"itemCache":{"id":${huge}}`);
      expect(text).toContain(`"land":{"id":${huge + 1n}}`);
      expect(text).toContain(`"identity":{"id":${huge + 2n},`);
      expect(text).toContain(`"vault":{"id":${vault},`);
      expect(text).toContain(`"stakedVaultId":${vault},`);
      // Only the citizen id is a string.
      expect(text).toContain('"id":"900"');
      const body = JSON.parse(text) as S1Body;
      for (const id of [body.itemCache.id, body.land.id, body.identity.id, body.vault.id]) {
        expect(typeof id).toBe("number");
      }
      expect(validS1.Check(body)).toBe(true);
    } finally {
      await api.removeCitizen(1, 900n);
    }
  });
});

describe("S2 record", () => {
  test("has no S1-only fields, identity holds the id only, image comes from the template", async () => {
    const response = await api.request(`/v1/staking/citizens/s2/42?address=${STAKER}`);
    expect(response.status).toBe(200);
    const body = await json<S2Body>(response);
    expect(body).toEqual({
      id: "42",
      type: "s2",
      name: "Outer Citizen #42",
      image: "https://img.example/s2/42.png",
      itemCache: { id: 2042 },
      land: { id: 3042 },
      identity: { id: 1042 },
      timelock: { time: 3_600, multiplier: 150, endTime: 1_700_000_000, timeFormatted: "1 hour" },
      bytes: { staked: 123.456789, points: 61 },
      totalPoints: 211,
    });
    for (const field of ["isHand", "vault", "stakedVaultId", "hasVault"]) {
      expect(field in body).toBe(false);
    }
    expect(validS2.Check(body)).toBe(true);
    expect(validS1.Check(body)).toBe(false);
    expect(body.totalPoints).toBe(body.timelock.multiplier + body.bytes.points);
  });
});

describe("ownership", () => {
  test("a citizen not staked by that address is 404 problem+json, with the indexed block", async () => {
    const other = "0x000000000000000000000000000000000000dead";
    const response = await api.request(`/v1/staking/citizens/s1/42?address=${other}`);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("x-indexed-block")).toBe("1234");
    expect(await json<object>(response)).toMatchObject({
      status: 404,
      title: "Citizen not staked",
    });
  });

  test("an S1 id is not found as S2 (ids overlap across seasons)", async () => {
    const response = await api.request(`/v1/staking/citizens/s2/7?address=${STAKER}`);
    expect(response.status).toBe(404);
  });

  test("addresses compare case-insensitively", async () => {
    const mixed = `0x${STAKER.slice(2).toUpperCase()}`;
    const checksummed = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    for (const address of [mixed, checksummed]) {
      const response = await api.request(`/v1/staking/citizens/s1/42?address=${address}`);
      expect(response.status).toBe(200);
    }
    const list = await json<Page>(await api.request(`/v1/staking/citizens?address=${mixed}`));
    expect(list.items).toHaveLength(3);
  });

  test("the listing's items are the single-citizen records", async () => {
    const list = await json<Page>(await api.request(`/v1/staking/citizens?address=${STAKER}`));
    expect(validPage.Check(list)).toBe(true);
    const single = await json<S2Body>(
      await api.request(`/v1/staking/citizens/s2/42?address=${STAKER}`),
    );
    expect(list.items.find((item) => item.type === "s2")).toEqual(single);
    expect(list.nextCursor).toBeNull();
  });
});

describe("units", () => {
  test("timeFormatted names whole units, leaves zeros out and is singular for 1", () => {
    expect(formatDuration(2_592_000n)).toBe("30 days");
    expect(formatDuration(62_208_000n)).toBe("720 days");
    expect(formatDuration(108_000n)).toBe("1 day 6 hours");
    expect(formatDuration(3_600n)).toBe("1 hour");
    expect(formatDuration(2_700n)).toBe("45 minutes");
    expect(formatDuration(90_061n)).toBe("1 day 1 hour 1 minute 1 second");
    // As rows give it (decimal digits), and again once remembered.
    expect(formatDuration("108000")).toBe("1 day 6 hours");
    expect(formatDuration("108000")).toBe("1 day 6 hours");
    expect(formatDuration("0")).toBe("0 seconds");
  });

  test("bytes.staked is wei / 1e18 with the fraction kept", () => {
    expect(weiToBytes(0n)).toBe(0);
    expect(weiToBytes(1_500_000_000_000_000_000n)).toBe(1.5);
    expect(weiToBytes(10n ** 24n)).toBe(1_000_000);
    expect(weiToBytes(123_456_789_000_000_000_000n)).toBe(123.456789);
    expect(weiToBytes(100_000_000_000_000_000n)).toBe(0.1);
    // As rows give it (decimal digits): under one BYTES, one wei, exactly one.
    expect(weiToBytes("250000000000000000")).toBe(0.25);
    expect(weiToBytes("1")).toBe(1e-18);
    expect(weiToBytes("1000000000000000000")).toBe(1);
    expect(weiToBytes("0")).toBe(0);
  });
});

describe("figures that do not give the record's points", () => {
  const CONFIGURATION = ["identity.creditYield", "identity.points", "vault.multiplier"];
  const row = (overrides: Partial<StakedCitizen>) =>
    citizenRow({ handClaimSource: null, ...overrides }) as StakedCitizen;
  /** The same row as the driver hands it over (decimal strings), which the API also serves. */
  const raw = (citizen: StakedCitizen) =>
    Object.fromEntries(
      Object.entries(citizen).map(([key, value]) => [
        key,
        typeof value === "bigint" ? value.toString() : value,
      ]),
    ) as unknown as StakedCitizen;
  const figures = (identityPoints: bigint, vaultMultiplier: bigint, bytesPoints = 0n) => ({
    identityPoints,
    vaultMultiplier,
    timelockMultiplier: 150n,
    bytesPoints,
  });

  test("are marked on S1 records, as all three configuration fields; S2 has none", () => {
    // 1100 identity points where the stake applied 100: its points say 150.
    const reconfigured = row({ ...figures(1_100n, 100n, 7n), totalPoints: 157n });
    expect(inferredFields(reconfigured)).toEqual(CONFIGURATION);
    expect(inferredFields(raw(reconfigured))).toEqual(CONFIGURATION);
    const applied = row({ ...figures(100n, 100n, 7n), totalPoints: 157n });
    expect(inferredFields(applied)).toEqual([]);
    expect(inferredFields(raw(applied))).toEqual([]);
    // An inferred Hand flag alone marks the multiplier; with the figures off, all three.
    expect(inferredFields(row({ ...applied, handClaimSource: "inferred" }))).toEqual([
      "vault.multiplier",
    ]);
    expect(inferredFields(row({ ...reconfigured, handClaimSource: "inferred" }))).toEqual(
      CONFIGURATION,
    );
    expect(
      inferredFields(
        citizenRow({ season: 2, timelockMultiplier: 150n, totalPoints: 9n }) as StakedCitizen,
      ),
    ).toEqual([]);
  });

  test("by the staker's rule exactly, in doubles and past 2^53 alike", () => {
    const cases: [bigint, bigint, bigint][] = [
      [0n, 2n ** 200n, 150n],
      [2n ** 60n, 100n, 150n],
      [2n ** 40n + 1n, 2n ** 12n + 3n, 301n],
      [66_667n, 3n, 50n],
      [9_999n, 1n, 1n],
      [300n, 300n, 300n],
      [2n ** 26n, 2n ** 26n + 1n, 1n],
    ];
    for (const [identityPoints, vaultMultiplier, timelockMultiplier] of cases) {
      const base = s1BasePoints(identityPoints, vaultMultiplier, timelockMultiplier);
      for (const totalPoints of [base - 1n, base, base + 1n]) {
        const citizen = row({
          identityPoints,
          vaultMultiplier,
          timelockMultiplier,
          bytesPoints: 0n,
          totalPoints,
        });
        const expected = totalPoints === base ? [] : CONFIGURATION;
        expect({
          case: `${identityPoints}x${vaultMultiplier}x${timelockMultiplier}=${totalPoints}`,
          marked: inferredFields(citizen),
        }).toEqual({
          case: `${identityPoints}x${vaultMultiplier}x${timelockMultiplier}=${totalPoints}`,
          marked: expected,
        });
        expect(inferredFields(raw(citizen))).toEqual(expected);
      }
    }
  });
});
