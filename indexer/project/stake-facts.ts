import type { CitizenRow, CitizenStakeRow, StakerEventRow } from "../../db/schema.ts";
import { s1BasePoints } from "../../lib/vocabulary.ts";
import type { StakeReads } from "../chain/stake-reads.ts";
import { splitOption } from "./event-rows.ts";

/** The vault multiplier used when no vault backs an S1 stake: hard-coded in the staker. */
export const NO_VAULT_MULTIPLIER = 100n;

/** Both readings of a Hand stake fit its points: the flag must come from the call itself. */
export class AmbiguousHandClaim extends Error {
  override name = "AmbiguousHandClaim";
}

/** The Hand flag as read from the stake call, and from where (docs/staker.md §7). */
export interface HandFlag {
  claim: boolean;
  source: "calldata" | "trace" | "inferred";
}

type HandClaimSource = NonNullable<CitizenStakeRow["handClaimSource"]>;
type ConfigurationSource = NonNullable<CitizenStakeRow["configurationSource"]>;
/** Where a stake's configuration figures were read (inferred is what buildCitizenStake says). */
export type ConfigurationRead = Exclude<ConfigurationSource, "inferred">;

/** An S2 stake's points before BYTES: 100 times the timelock multiplier, in hundredths. */
export function s2BasePoints(timelockMultiplier: bigint): bigint {
  return (100n * timelockMultiplier) / 100n;
}

/**
 * Whether a stake's base points follow from its own figures: an S1 row whose configuration is
 * not inferred, an S2 row whose points are its timelock multiplier's. One that does not was read
 * from another state than its block's (a node mining the next one), or (S1) its block
 * reconfigured the staker.
 */
export function pointsExplained(row: CitizenStakeRow): boolean {
  if (row.season === 2) return row.basePoints === s2BasePoints(row.timelockMultiplier);
  return row.configurationSource !== "inferred";
}

/**
 * The vault an S1 stake counts (its component vault, else the one staked with it, else 0) and
 * that vault's configured multiplier (the hard-coded 100 with no vault).
 */
export function effectiveVault(
  citizen: CitizenRow,
  reads: StakeReads,
): { vaultId: bigint; vaultMultiplier: bigint } {
  const componentVault = citizen.componentVaultId ?? 0n;
  const vaultId = componentVault !== 0n ? componentVault : (reads.stakedVaultId ?? 0n);
  return {
    vaultId,
    vaultMultiplier: vaultId !== 0n ? (reads.configuredVaultMultiplier ?? 0n) : NO_VAULT_MULTIPLIER,
  };
}

/**
 * Whether the configuration figures in `reads` give an S1 stake's base points, with or without
 * a Hand claim (a claim only for a Hand): the stake's points are the witness of what it read.
 */
export function figuresExplain(input: {
  citizen: CitizenRow;
  reads: StakeReads;
  timelockMultiplier: bigint;
  basePoints: bigint;
}): boolean {
  const { citizen, reads } = input;
  const { vaultMultiplier } = effectiveVault(citizen, reads);
  const candidates = citizen.isHand
    ? [vaultMultiplier, reads.handMultiplier ?? 0n]
    : [vaultMultiplier];
  const identityPoints = reads.identityPoints ?? 0n;
  return candidates.some(
    (multiplier) =>
      s1BasePoints(identityPoints, multiplier, input.timelockMultiplier) === input.basePoints,
  );
}

/**
 * Which vault multiplier an S1 stake applied. The Hand flag lives only in the stake call, so it
 * is first read from the frozen base points: only one candidate reproduces them, unless both
 * give the same points (then `handFlag`, read from the call, decides).
 */
export function appliedVaultMultiplier(input: {
  isHand: boolean;
  identityPoints: bigint;
  timelockMultiplier: bigint;
  basePoints: bigint;
  vaultMultiplier: bigint;
  handMultiplier: bigint;
  handFlag?: HandFlag;
}): { multiplier: bigint; handClaim: boolean; source: HandClaimSource | null } {
  const points = (multiplier: bigint) =>
    s1BasePoints(input.identityPoints, multiplier, input.timelockMultiplier);
  const plain = (source: HandClaimSource | null) => ({
    multiplier: input.vaultMultiplier,
    handClaim: false,
    source,
  });
  const claimed = (source: HandClaimSource) => ({
    multiplier: input.handMultiplier,
    handClaim: true,
    source,
  });
  // Only a Hand can claim: the staker reverts CitizenIsNotHand for anyone else.
  if (!input.isHand) return plain(null);
  const claimFits = points(input.handMultiplier) === input.basePoints;
  const plainFits = points(input.vaultMultiplier) === input.basePoints;
  if (claimFits && !plainFits) return claimed("points");
  if (plainFits && !claimFits) return plain("points");
  // Equal multipliers (the vault is a "?" one) apply the same number either way.
  if (input.handMultiplier === input.vaultMultiplier) return plain("points");
  if (input.handFlag === undefined) throw new AmbiguousHandClaim();
  return input.handFlag.claim ? claimed(input.handFlag.source) : plain(input.handFlag.source);
}

/**
 * The row of citizen_stakes for one S1/S2 Stake event. `laterBonus` is the BYTES bonus deposited
 * into this stake after it, up to the block `reads` were made at: already inside their points.
 * `configuration` says where the configuration figures in `reads` were read (the end of a block
 * by default); figures that do not give the stake's points are inferred, whatever their source.
 */
export function buildCitizenStake(input: {
  event: StakerEventRow;
  citizen: CitizenRow;
  reads: StakeReads;
  laterBonus: bigint;
  handFlag?: HandFlag;
  configuration?: ConfigurationRead;
}): CitizenStakeRow {
  const { event, citizen, reads } = input;
  const season = event.citizenSeason;
  const citizenId = event.citizenId;
  if ((season !== 1 && season !== 2) || citizenId == null || event.timelockOption == null) {
    throw new Error(`event ${event.blockNumber}/${event.logIndex} is not a citizen stake`);
  }
  const { high: duration, low: timelockMultiplier } = splitOption(event.timelockOption);
  const basePoints = reads.points - input.laterBonus;
  const common = {
    blockNumber: event.blockNumber,
    logIndex: event.logIndex,
    season,
    citizenId,
    staker: event.account,
    timelockDuration: duration,
    timelockMultiplier,
    timelockEndTime: reads.timelockEndTime,
    basePoints,
  };
  if (season === 2) return common;

  const { vaultId, vaultMultiplier } = effectiveVault(citizen, reads);
  const identityPoints = reads.identityPoints ?? 0n;
  const applied = appliedVaultMultiplier({
    isHand: citizen.isHand ?? false,
    identityPoints,
    timelockMultiplier,
    basePoints,
    vaultMultiplier,
    handMultiplier: reads.handMultiplier ?? 0n,
    handFlag: input.handFlag,
  });
  const explained =
    s1BasePoints(identityPoints, applied.multiplier, timelockMultiplier) === basePoints;
  return {
    ...common,
    configurationSource: explained ? (input.configuration ?? "block") : "inferred",
    creditYield: reads.creditYield ?? "",
    identityPoints,
    vaultId,
    vaultCreditMultiplier: vaultId !== 0n ? (reads.vaultCreditMultiplier ?? "") : null,
    vaultMultiplier: applied.multiplier,
    handClaim: applied.handClaim,
    handClaimSource: applied.source,
    stakedVaultId: reads.stakedVaultId ?? 0n,
    hasVault: reads.hasVault ?? false,
  };
}
