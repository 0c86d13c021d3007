/** Turns a staked_citizens row into the record the contract describes (pure, no I/O). */
import type { StakedCitizen } from "../../../db/schema.ts";
import type { S1Record, S2Record } from "./model.ts";

export interface ImageTemplates {
  /** A URL with `{id}` where the citizen id goes. */
  s1?: string;
  s2?: string;
}

const WEI_PER_BYTE = 10n ** 18n;

/** wei → BYTES as a JSON number, computed from the exact decimal string (no float division). */
export function weiToBytes(wei: bigint): number {
  const whole = wei / WEI_PER_BYTE;
  const fraction = (wei % WEI_PER_BYTE).toString().padStart(18, "0").replace(/0+$/, "");
  return Number(fraction === "" ? whole.toString() : `${whole}.${fraction}`);
}

const UNITS: [bigint, string][] = [
  [86_400n, "day"],
  [3_600n, "hour"],
  [60n, "minute"],
  [1n, "second"],
];

/** "30 days", "1 day 6 hours", "45 minutes": whole units, zero units left out, singular for 1. */
export function formatDuration(seconds: bigint): string {
  if (seconds === 0n) return "0 seconds";
  const parts: string[] = [];
  let rest = seconds;
  for (const [size, unit] of UNITS) {
    const count = rest / size;
    rest %= size;
    if (count > 0n) parts.push(`${count} ${unit}${count === 1n ? "" : "s"}`);
  }
  return parts.join(" ");
}

function image(template: string | undefined, id: bigint, stored: string | null) {
  if (template) return template.replaceAll("{id}", id.toString());
  if (stored && /^https?:\/\//i.test(stored)) return stored;
  return undefined;
}

/**
 * The record's fields whose value is assumed, not read: an S1 stake's Hand flag hides in the
 * inner call of a contract wallet, and a node without a trace API leaves it inferred (no claim),
 * so the vault multiplier served is the one the stake applied only if there was no claim.
 */
export function inferredFields(row: StakedCitizen): string[] {
  return row.handClaimSource === "inferred" ? ["vault.multiplier"] : [];
}

function common<Type extends "s1" | "s2">(
  row: StakedCitizen,
  type: Type,
  templates: ImageTemplates,
  fallbackName: string,
) {
  const id = row.citizenId.toString();
  const url = image(templates[type], row.citizenId, row.image);
  return {
    id,
    type,
    name: row.name || `${fallbackName} #${id}`,
    ...(url === undefined ? {} : { image: url }),
    itemCache: { id: row.itemCacheId },
    land: { id: row.landDeedId },
    timelock: {
      time: Number(row.timelockDuration),
      multiplier: Number(row.timelockMultiplier),
      endTime: Number(row.timelockEndTime),
      timeFormatted: formatDuration(row.timelockDuration),
    },
    bytes: { staked: weiToBytes(row.stakedBytes), points: Number(row.bytesPoints) },
    totalPoints: Number(row.totalPoints),
  };
}

function inferred(row: StakedCitizen) {
  const fields = inferredFields(row);
  return fields.length === 0 ? {} : { inferred: fields };
}

export function toS2Record(row: StakedCitizen, templates: ImageTemplates): S2Record {
  return {
    ...common(row, "s2", templates, "Outer Citizen"),
    identity: { id: row.identityId },
    ...inferred(row),
  };
}

export function toS1Record(row: StakedCitizen, templates: ImageTemplates): S1Record {
  return {
    ...common(row, "s1", templates, "Citizen"),
    identity: {
      id: row.identityId,
      creditYield: row.creditYield ?? "",
      points: Number(row.identityPoints ?? 0n),
    },
    vault: {
      id: row.vaultId ?? 0n,
      creditMultiplier: row.vaultCreditMultiplier ?? "None",
      multiplier: Number(row.vaultMultiplier ?? 100n),
    },
    isHand: row.isHand ?? false,
    stakedVaultId: row.stakedVaultId ?? 0n,
    hasVault: row.hasVault ?? false,
    ...inferred(row),
  };
}

export function toRecord(row: StakedCitizen, templates: ImageTemplates): S1Record | S2Record {
  return row.season === 2 ? toS2Record(row, templates) : toS1Record(row, templates);
}
