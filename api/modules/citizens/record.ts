/**
 * Writes a staked_citizens row as the record the contract describes, as JSON text: the record's
 * members, their order and their JSON come from its `t` schema (model.ts) through json-writer.ts;
 * here is only where each member's value comes from (pure, no I/O). No record object is built
 * and then walked by JSON.stringify with a replacer for its bigints, which cost a hot read
 * several microseconds. uint256 ids are written as JSON integers with their exact digits, so a
 * value beyond 2^53 survives; records.test.ts holds the text against the model's schemas.
 */
import type { StakedCitizen } from "../../../db/schema.ts";
import { s1BasePoints } from "../../../lib/vocabulary.ts";
import type { Raw } from "../../raw-statement.ts";
import { jsonWriter } from "./json-writer.ts";
import { S1Record, S2Record } from "./model.ts";

/** A row as drizzle maps it (bigints) or as the driver gives it (decimal strings). */
export type CitizenRow = StakedCitizen | Raw<StakedCitizen>;

export interface ImageTemplates {
  /** A URL with `{id}` where the citizen id goes. */
  s1?: string;
  s2?: string;
}

/**
 * wei → BYTES as a JSON number, from the exact decimal digits: the point goes 18 digits from the
 * right (no float division, and no BigInt arithmetic, which cost a record microseconds).
 */
export function weiToBytes(wei: bigint | string): number {
  const digits = String(wei).padStart(19, "0");
  const point = digits.length - 18;
  const fraction = digits.slice(point).replace(/0+$/, "");
  const whole = digits.slice(0, point);
  return Number(fraction === "" ? whole : `${whole}.${fraction}`);
}

const UNITS: [bigint, string][] = [
  [86_400n, "day"],
  [3_600n, "hour"],
  [60n, "minute"],
  [1n, "second"],
];

/**
 * "30 days", "1 day 6 hours", "45 minutes": whole units, zero units left out, singular for 1.
 * Remembered by value: stakes use a handful of timelock options, and BigInt division is slow.
 */
export function formatDuration(seconds: bigint | string): string {
  const key = String(seconds);
  let text = durations.get(key);
  if (text === undefined) {
    if (durations.size >= MAX_DURATIONS) durations.clear();
    text = spellDuration(BigInt(seconds));
    durations.set(key, text);
  }
  return text;
}

const durations = new Map<string, string>();
const MAX_DURATIONS = 1_000;

function spellDuration(seconds: bigint): string {
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

function image(template: string | undefined, id: string, stored: string | null) {
  if (template) return template.replaceAll("{id}", id);
  if (stored && /^https?:\/\//i.test(stored)) return stored;
  return undefined;
}

/** The S1 fields the staker's configuration decides: what a reconfiguration can leave unknown. */
const CONFIGURATION_FIELDS = ["identity.creditYield", "identity.points", "vault.multiplier"];

/**
 * The record's fields whose value is assumed, not read:
 *  - an S1 stake's Hand flag hides in the inner call of a contract wallet, and a node without a
 *    trace API leaves it inferred (no claim), so the vault multiplier served is the one the stake
 *    applied only if there was no claim;
 *  - an S1 record whose figures do not give its own points: the staker's owner reconfigured in
 *    the stake's block and nothing the indexer could read showed the configuration the stake saw
 *    (citizen_stakes.configuration_source 'inferred'). Its totalPoints are the staker's own, its
 *    figures the end of that block's, and all three configuration fields are marked: the points
 *    do not say which of them changed. Checked on the record's own numbers, so no record that
 *    contradicts itself is served unmarked, however its row came to be.
 */
export function inferredFields(row: CitizenRow): string[] {
  if (row.season === 1 && !figuresGivePoints(row)) return CONFIGURATION_FIELDS;
  return row.handClaimSource === "inferred" ? ["vault.multiplier"] : [];
}

/**
 * Whether an S1 record's identity.points x vault.multiplier x timelock.multiplier give its
 * totalPoints less bytes.points (s1BasePoints). In doubles where every number is exact (any real
 * configuration: the product stays far below 2^53), which costs a record half what BigInt
 * parsing does; in bigints otherwise. A zero factor makes the product 0 exactly either way.
 */
function figuresGivePoints(row: CitizenRow): boolean {
  const identityPoints = row.identityPoints ?? 0;
  const vaultMultiplier = row.vaultMultiplier ?? 100;
  const product = Number(identityPoints) * Number(vaultMultiplier) * Number(row.timelockMultiplier);
  const total = Number(row.totalPoints);
  const bytes = Number(row.bytesPoints);
  if (Number.isSafeInteger(product) && Number.isSafeInteger(total) && Number.isSafeInteger(bytes)) {
    return (product - (product % 10_000)) / 10_000 === total - bytes;
  }
  const base = s1BasePoints(
    BigInt(identityPoints),
    BigInt(vaultMultiplier),
    BigInt(row.timelockMultiplier),
  );
  return base === BigInt(row.totalPoints) - BigInt(row.bytesPoints);
}

/** What every record's common members are made of, for its type and fallback name. */
function commonSources(type: "s1" | "s2", fallbackName: string) {
  return {
    id: (row: CitizenRow) => String(row.citizenId),
    name: (row: CitizenRow) => row.name || `${fallbackName} #${row.citizenId}`,
    image: (row: CitizenRow, templates: ImageTemplates) =>
      image(templates[type], String(row.citizenId), row.image),
    itemCache: { id: (row: CitizenRow) => row.itemCacheId },
    land: { id: (row: CitizenRow) => row.landDeedId },
    timelock: {
      time: (row: CitizenRow) => Number(row.timelockDuration),
      multiplier: (row: CitizenRow) => Number(row.timelockMultiplier),
      endTime: (row: CitizenRow) => Number(row.timelockEndTime),
      timeFormatted: (row: CitizenRow) => formatDuration(row.timelockDuration),
    },
    bytes: {
      staked: (row: CitizenRow) => weiToBytes(row.stakedBytes),
      points: (row: CitizenRow) => Number(row.bytesPoints),
    },
    totalPoints: (row: CitizenRow) => Number(row.totalPoints),
    inferred: (row: CitizenRow) => {
      const fields = inferredFields(row);
      return fields.length === 0 ? undefined : fields;
    },
  };
}

/** What the S1 record's own members are made of. */
function s1Sources() {
  return {
    identity: {
      id: (row: CitizenRow) => row.identityId,
      creditYield: (row: CitizenRow) => row.creditYield ?? "",
      points: (row: CitizenRow) => Number(row.identityPoints ?? 0),
    },
    vault: {
      id: (row: CitizenRow) => row.vaultId ?? 0n,
      creditMultiplier: (row: CitizenRow) => row.vaultCreditMultiplier ?? "None",
      multiplier: (row: CitizenRow) => Number(row.vaultMultiplier ?? 100),
    },
    isHand: (row: CitizenRow) => row.isHand ?? false,
    stakedVaultId: (row: CitizenRow) => row.stakedVaultId ?? 0n,
    hasVault: (row: CitizenRow) => row.hasVault ?? false,
  };
}

/** What the S2 record's own members are made of. */
function s2Sources() {
  return { identity: { id: (row: CitizenRow) => row.identityId } };
}

/** The S1 record (model.ts S1Record) as JSON text. */
export const s1RecordJson = jsonWriter<typeof S1Record, CitizenRow, ImageTemplates>(S1Record, {
  ...commonSources("s1", "Citizen"),
  ...s1Sources(),
});

/** The S2 record (model.ts S2Record) as JSON text. */
export const s2RecordJson = jsonWriter<typeof S2Record, CitizenRow, ImageTemplates>(S2Record, {
  ...commonSources("s2", "Outer Citizen"),
  ...s2Sources(),
});

export function recordJson(row: CitizenRow, templates: ImageTemplates): string {
  return row.season === 2 ? s2RecordJson(row, templates) : s1RecordJson(row, templates);
}

/** Set by scripts/build-binary.sh in the compiled binary: RECORD_WRITER as the source gives it. */
declare const BUILT_RECORD_WRITER: string | undefined;

/**
 * The version of this writer: a hash of the records' schemas and of the code of every function
 * here that makes a value. The projection stores it beside each record it writes
 * (staked_citizens.record_writer), and the API serves a stored record only when it is its own
 * writer's, so a deployment that changes the record answers the new one before its `migrate`
 * writes the stored ones again. The bundler rewrites the functions' text (`void 0` for
 * `undefined`, declarations merged), so the binary carries the value its source gives: a binary
 * and `bun scripts/cli.ts` of one tree agree on which records are theirs.
 */
export const RECORD_WRITER =
  typeof BUILT_RECORD_WRITER === "string" ? BUILT_RECORD_WRITER : sourceRecordWriter();

function sourceRecordWriter(): string {
  return Bun.hash(
    [
      JSON.stringify([S1Record, S2Record]),
      ...[weiToBytes, formatDuration, spellDuration, image, inferredFields, figuresGivePoints],
      ...[commonSources, s1Sources, s2Sources, jsonWriter, recordJson],
    ].join("\n"),
  ).toString(36);
}

/**
 * The record the projection stores with a row: as the API answers it without image templates
 * (with one, the API renders the row itself).
 */
export function storedRecord(row: CitizenRow): { record: string; recordWriter: string } {
  return { record: recordJson(row, {}), recordWriter: RECORD_WRITER };
}
