/**
 * The devnet's staker configuration, mainnet-like (docs/staker.md §6): timelocks in 30-day months,
 * identity credit points, vault multipliers, caps, and the reward-rate table that maps a citizen's
 * identity and component vault to its credit yield.
 */
import { STAKER_ASSET_ID, type StakerAssetId } from "../lib/vocabulary.ts";

export { HAND_CLASS, STAKER_ASSET_ID, type StakerAssetId } from "../lib/vocabulary.ts";

export const DAY = 86_400n;
export const MONTH = 30n * DAY;
export const BYTES_UNIT = 10n ** 18n;

export const VAULT_CAP = 2_000n * BYTES_UNIT;
export const NO_VAULT_CAP = 200n * BYTES_UNIT;
/** Basis points of every claim minted to the treasury (3%). */
export const DAO_TAX = 300n;

/** The value a Stake event carries: duration in the high 128 bits, multiplier in the low 128. */
export function encodeTimelockOption(durationSeconds: bigint, multiplier: bigint): bigint {
  return (durationSeconds << 128n) | multiplier;
}

/** Option id = index; [duration in seconds, multiplier in hundredths]. */
export const TIMELOCK_OPTIONS: Record<StakerAssetId, readonly (readonly [bigint, bigint])[]> = {
  [STAKER_ASSET_ID.s1_citizen]: [
    [1n * MONTH, 100n],
    [3n * MONTH, 125n],
    [6n * MONTH, 150n],
    [12n * MONTH, 200n],
    [24n * MONTH, 300n],
  ],
  [STAKER_ASSET_ID.s2_citizen]: [
    [1n * MONTH, 100n],
    [3n * MONTH, 125n],
    [6n * MONTH, 150n],
    [12n * MONTH, 175n],
    [24n * MONTH, 200n],
  ],
  // BYTES stakes need a configured option id, but its duration and multiplier are never used.
  [STAKER_ASSET_ID.bytes]: [[1n * MONTH, 100n]],
  [STAKER_ASSET_ID.lp]: [
    [1n * MONTH, 100n],
    [3n * MONTH, 125n],
    [6n * MONTH, 150n],
    [12n * MONTH, 200n],
    [24n * MONTH, 300n],
    [36n * MONTH, 400n],
  ],
};

export const CREDIT_YIELDS = ["Low", "Mid", "High"] as const;
export type CreditYield = (typeof CREDIT_YIELDS)[number];

export const IDENTITY_CREDIT_POINTS: Record<CreditYield, bigint> = {
  Low: 100n,
  Mid: 200n,
  High: 300n,
};

export const VAULT_TIERS = ["Low", "Medium", "Medium High", "High", "Very High", "?"] as const;
export type VaultTier = (typeof VAULT_TIERS)[number];

export const VAULT_CREDIT_MULTIPLIERS: Record<VaultTier, bigint> = {
  Low: 100n,
  Medium: 150n,
  "Medium High": 175n,
  High: 200n,
  "Very High": 250n,
  "?": 300n,
};

/** An identity's kind decides its base reward rate and its credit yield (a Hand yields High). */
export const IDENTITY_KINDS = ["Low", "Mid", "High", "Hand"] as const;
export type IdentityKind = (typeof IDENTITY_KINDS)[number];

const IDENTITY_BASE_RATE: Record<IdentityKind, bigint> = { Low: 1n, Mid: 3n, High: 8n, Hand: 15n };
const IDENTITY_YIELD: Record<IdentityKind, CreditYield> = {
  Low: "Low",
  Mid: "Mid",
  High: "High",
  Hand: "High",
};
const VAULT_RATE_MODIFIER: Record<VaultTier, bigint> = {
  Low: 1n,
  Medium: 2n,
  "Medium High": 3n,
  High: 4n,
  "Very High": 5n,
  "?": 7n,
};

/** A citizen's reward rate: identity base plus its component vault's modifier ("" = no vault). */
export function citizenRewardRate(
  identity: IdentityKind,
  componentVaultTier: VaultTier | "",
): bigint {
  return (
    IDENTITY_BASE_RATE[identity] +
    (componentVaultTier === "" ? 0n : VAULT_RATE_MODIFIER[componentVaultTier])
  );
}

/**
 * Every (reward rate, component vault tier) a minted citizen can have, with its credit yield.
 * Rates outside this table (such as 4 with no vault) stay unmapped on purpose: they stake with
 * credit yield "" and 0 identity points, as on mainnet.
 */
export function identityCreditYieldTable(): {
  rate: bigint;
  vaultTier: VaultTier | "";
  creditYield: CreditYield;
}[] {
  return IDENTITY_KINDS.flatMap((identity) =>
    (["", ...VAULT_TIERS] as const).map((vaultTier) => ({
      rate: citizenRewardRate(identity, vaultTier),
      vaultTier,
      creditYield: IDENTITY_YIELD[identity],
    })),
  );
}

/** Reward windows per pool in BYTES wei per second, starting at the pools' common start time. */
export function poolConfiguration(startTime: bigint) {
  const perSecond = (bytesPerDay: bigint) => (bytesPerDay * BYTES_UNIT) / DAY;
  return [
    {
      assetType: STAKER_ASSET_ID.s1_citizen,
      daoTax: DAO_TAX,
      rewardWindows: [
        { startTime, reward: perSecond(10_000n) },
        { startTime: startTime + 360n * DAY, reward: perSecond(5_000n) },
      ],
    },
    {
      assetType: STAKER_ASSET_ID.s2_citizen,
      daoTax: DAO_TAX,
      rewardWindows: [{ startTime, reward: perSecond(4_000n) }],
    },
    {
      assetType: STAKER_ASSET_ID.lp,
      daoTax: DAO_TAX,
      rewardWindows: [{ startTime, reward: perSecond(6_000n) }],
    },
    // Unused for rewards, but BYTES stakes revert UnconfiguredPool without a window.
    {
      assetType: STAKER_ASSET_ID.bytes,
      daoTax: DAO_TAX,
      rewardWindows: [{ startTime, reward: 0n }],
    },
  ];
}
