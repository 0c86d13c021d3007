/**
 * The staking vocabulary every layer shares (chain reads, projection, API, devnet): one place
 * for the names the staker and the Neo Tokyo contracts use.
 */

/** S1 and S2 citizens: ids overlap, so a citizen is keyed by (season, id). */
export type Season = 1 | 2;

/** The identity class whose citizens may claim the Hand multiplier (STAKER-FACTS §2). */
export const HAND_CLASS = "Hand of Citadel";
