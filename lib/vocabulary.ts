/**
 * The staking vocabulary every layer shares (chain reads, projection, API, devnet): one place
 * for the names the staker and the Neo Tokyo contracts use, and how they map onto each other.
 */

/** S1 and S2 citizens: ids overlap, so a citizen is keyed by (season, id). */
export type Season = 1 | 2;

/** The API's name for a season. */
export type CitizenType = "s1" | "s2";

/** The staker's asset types, as stored in staker_events.asset_type. */
export const STAKER_ASSETS = ["s1_citizen", "s2_citizen", "bytes", "lp"] as const;
export type StakerAsset = (typeof STAKER_ASSETS)[number];

/**
 * The staker's AssetType enum (uint8), which `stake` and `withdraw` take. Logs never carry it:
 * they carry the asset's address (docs/staker.md §1).
 */
export const STAKER_ASSET_ID = { s1_citizen: 0, s2_citizen: 1, bytes: 2, lp: 3 } as const;
export type StakerAssetId = (typeof STAKER_ASSET_ID)[StakerAsset];

/** The staker's citizen asset types. */
export const CITIZEN_ASSETS = ["s1_citizen", "s2_citizen"] as const;
export type CitizenAsset = (typeof CITIZEN_ASSETS)[number];

export const SEASON_OF_ASSET: Record<CitizenAsset, Season> = { s1_citizen: 1, s2_citizen: 2 };
export const SEASON_OF_TYPE: Record<CitizenType, Season> = { s1: 1, s2: 2 };
export const CITIZEN_ASSET_OF_SEASON: Record<Season, CitizenAsset> = {
  1: "s1_citizen",
  2: "s2_citizen",
};

/** Whether an event's asset type is a citizen (not BYTES, LP or none). */
export function isCitizenAsset(assetType: string | null | undefined): assetType is CitizenAsset {
  return assetType === "s1_citizen" || assetType === "s2_citizen";
}

/** The identity class whose citizens may claim the Hand multiplier (docs/staker.md §2). */
export const HAND_CLASS = "Hand of Citadel";

/**
 * BYTES add floor(amount * 100 / 200e18) points per deposit, each deposit on its own
 * (docs/staker.md §2). The SQL side of the same rule is in db/functions/project_staked_citizens.sql.
 */
export function bytesBonus(amount: bigint): bigint {
  return (amount * 100n) / 200_000_000_000_000_000_000n;
}

/**
 * An S1 stake's points before BYTES: identity points x vault multiplier x timelock multiplier,
 * floored twice by 100, which floors the product by 10,000 once (docs/staker.md §2). A record
 * whose figures do not give its own points contradicts itself (api/modules/citizens/record.ts).
 */
export function s1BasePoints(
  identityPoints: bigint,
  vaultMultiplier: bigint,
  timelockMultiplier: bigint,
): bigint {
  return (identityPoints * vaultMultiplier * timelockMultiplier) / 100n / 100n;
}
