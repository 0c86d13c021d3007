/**
 * The column types the tables share: uint256 values as numeric(78,0) read as bigint (exact),
 * block numbers as bigint, lowercase 0x-hex checks for addresses and hashes, and the enums.
 * drizzle-kit sees the enums through db/schema.ts, which exports them with the tables.
 */
import { sql } from "drizzle-orm";
import { bigint, numeric, pgEnum } from "drizzle-orm/pg-core";
import { STAKER_EVENTS } from "../contracts/staker-events.ts";
import { STAKER_ASSETS } from "../lib/vocabulary.ts";

export const uint256 = (name: string) => numeric(name, { precision: 78, scale: 0, mode: "bigint" });
export const blockNumber = (name: string) => bigint(name, { mode: "bigint" });
/**
 * Lowercase 0x-hex of `digits` digits. Said as a length and an unbounded class because Postgres's
 * regex engine runs a bounded repeat ({40}, {64}) about ten times slower, and these checks run
 * on every event a backfill writes (they were a quarter of its insert CPU).
 */
const isHex = (column: string, digits: number) =>
  sql.raw(`length(${column}) = ${digits + 2} and ${column} ~ '^0x[0-9a-f]+$'`);
export const isAddress = (column: string) => isHex(column, 40);
export const isHash = (column: string) => isHex(column, 64);

export const stakerEventName = pgEnum("staker_event_name", STAKER_EVENTS);
/** The staker's AssetType enum, told apart by the event's asset address. */
export const assetType = pgEnum("asset_type", STAKER_ASSETS);
/**
 * Where an S1 stake's Hand flag was learned. It lives only in the stake call's fifth word
 * (docs/staker.md §7): `points` when only one reading fits the stored points, `calldata` from a
 * direct call, `trace` from the inner call of a contract wallet, `inferred` when both readings
 * fit and the node has no trace API (then no claim is assumed).
 */
export const handClaimSource = pgEnum("hand_claim_source", [
  "points",
  "calldata",
  "trace",
  "inferred",
]);
/**
 * Where an S1 stake's configuration figures (credit yield, identity points, vault multiplier)
 * were read. Configuration calls emit nothing and may share the stake's block, before or after
 * it, so the figures are taken only where they give the stake's own points (its witness):
 * `block` at the end of the stake's block (or of a later one that shows the same stake),
 * `parent` at the end of the block before (reconfigured after the stake, in its block), `trace`
 * from the stake transaction's prestate (reconfigured both before and after it), `inferred`
 * when none of them does: the end-of-block figures, which the API marks as inferred.
 */
export const configurationSource = pgEnum("configuration_source", [
  "block",
  "parent",
  "trace",
  "inferred",
]);
