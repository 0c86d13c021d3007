/**
 * The citizens endpoints' shapes, declared once: they validate requests, type the handlers and
 * records, and make the OpenAPI document. Units as docs/api-fields.md says: the citizen id is a
 * decimal string, every nested id a JSON number as the seed publishes it, points and multipliers
 * the staker's raw numbers, times unix seconds.
 */
import { Kind } from "@sinclair/typebox";
import { type Static, t } from "elysia";

/**
 * A uint256 id written as a JSON integer with its exact digits (record.ts), so a value
 * beyond 2^53 survives in the JSON text. Rows carry it as a bigint or its digits; the document and a client
 * see `type: integer`. Elysia's own t.Integer is not used: it also admits numeric strings.
 */
const uintId = (description: string) =>
  t.Unsafe<bigint>({ [Kind]: "Integer", type: "integer", minimum: 0, description });

const itemCache = t.Object({ id: uintId("S1/S2 citizen contract's getItemCacheIdOfTokenId") });
const land = t.Object({ id: uintId("getLandDeedIdOfTokenId") });

const timelock = t.Object({
  time: t.Number({ description: "timelock duration in seconds (timelockOption >> 128)" }),
  multiplier: t.Number({ description: "timelock multiplier in hundredths (125 = 1.25x)" }),
  endTime: t.Number({ description: "unix seconds when the timelock ends" }),
  timeFormatted: t.String({ examples: ["30 days", "1 day 6 hours"] }),
});

const bytes = t.Object({
  staked: t.Number({ description: "staked BYTES (wei / 1e18, fraction kept)" }),
  points: t.Number({ description: "points the BYTES deposits added" }),
});

const citizenId = t.String({ pattern: "^[0-9]+$", description: "citizen id (decimal)" });

const common = {
  name: t.String(),
  image: t.Optional(
    t.String({ description: "absent when neither a template nor metadata gives one" }),
  ),
  itemCache,
  land,
  timelock,
  bytes,
  totalPoints: t.Number({ description: "the staker's stakedS1/stakedS2(...).points" }),
};

/** Last in each record: the JSON writer (record.ts) follows the schema's order. */
const inferred = t.Optional(
  t.Array(t.String(), {
    description:
      'the fields of this record whose value is an assumption rather than read from the chain, by their path: ["vault.multiplier"] for a Hand claim sent through a contract wallet whose flag the node could not trace (served as no claim); ["identity.creditYield", "identity.points", "vault.multiplier"] when the staker was reconfigured in the stake\'s block and no read shows what the stake saw (served as the end of that block has them; totalPoints is still the staker\'s own, and these figures do not give it); absent when every value is read',
    examples: [
      ["vault.multiplier"],
      ["identity.creditYield", "identity.points", "vault.multiplier"],
    ],
  }),
);

export const S1Record = t.Object(
  {
    id: citizenId,
    type: t.Literal("s1"),
    ...common,
    identity: t.Object({
      id: uintId("getIdentityIdOfTokenId"),
      creditYield: t.String({ description: '"Low", "Mid", "High"; "" when unmapped' }),
      points: t.Number(),
    }),
    vault: t.Object({
      id: uintId("component vault, else the staked vault, else 0"),
      creditMultiplier: t.String({ description: '"None" when there is no vault' }),
      multiplier: t.Number({ description: "vault multiplier the stake applied, in hundredths" }),
    }),
    isHand: t.Boolean(),
    stakedVaultId: uintId("stakedS1(...).stakedVaultId"),
    hasVault: t.Boolean(),
    inferred,
  },
  { additionalProperties: false },
);

export const S2Record = t.Object(
  {
    id: citizenId,
    type: t.Literal("s2"),
    ...common,
    identity: t.Object({ id: uintId("getIdentityIdOfTokenId") }),
    inferred,
  },
  { additionalProperties: false },
);

export const CitizenRecord = t.Union([S1Record, S2Record]);

export const CitizenPage = t.Object({
  items: t.Array(CitizenRecord),
  nextCursor: t.Union([t.String(), t.Null()], {
    description: "pass as `cursor` for the next page; null on the last page",
  }),
});

/**
 * Parameter descriptions double as the `detail` of a 400 for that parameter, so they say what is
 * expected.
 */
const address = t.String({
  pattern: "^0x[0-9a-fA-F]{40}$",
  description: "the staker's address: 0x followed by 40 hex digits (any case)",
});

export const CitizenParams = t.Object({
  // Any number of digits: leading zeros change nothing; the uint256 bound is a comparison.
  id: t.String({
    pattern: "^[0-9]+$",
    description: "the citizen id: a decimal integer in uint256 range",
  }),
});

/** `?block=N`: the answer as of a past block; the range check against the indexed one follows. */
const block = t.Optional(
  t.String({
    pattern: "^[0-9]+$",
    description:
      "answer as the data stood after this block (a decimal block number from the first block with a staker event to the indexed block); the current data when absent",
  }),
);

export const CitizenQuery = t.Object({ address, block });

/** The response header that names the block an as-of answer reflects. */
export const AS_OF_BLOCK_HEADER = "x-as-of-block";

export const AsOfBlockHeader = t.String({
  pattern: "^[0-9]+$",
  description:
    "with ?block=N: the block the answer reflects (N); X-Indexed-Block stays the current indexed block",
});

export const ListQuery = t.Object({
  address,
  block,
  // Unions of literals, not t.UnionEnum: that one defaults to its first value, which would turn
  // an absent `type` into a filter nobody asked for.
  type: t.Optional(
    t.Union([t.Literal("s1"), t.Literal("s2")], { description: "s1 or s2; both when absent" }),
  ),
  sort: t.Optional(
    t.Union([t.Literal("id"), t.Literal("totalPoints"), t.Literal("endTime")], {
      description: "id, totalPoints or endTime (default id); ties go by type, then id",
    }),
  ),
  order: t.Optional(
    t.Union([t.Literal("asc"), t.Literal("desc")], { description: "asc or desc (default asc)" }),
  ),
  limit: t.Optional(
    t.String({
      pattern: "^([1-9][0-9]?|100)$",
      description: "items per page: 1 to 100 (default 25)",
    }),
  ),
  cursor: t.Optional(
    t.String({
      pattern: "^[A-Za-z0-9_-]{1,512}$",
      description: "the nextCursor of the previous page, with the same sort and order",
    }),
  ),
});

export type S1Record = Static<typeof S1Record>;
export type S2Record = Static<typeof S2Record>;
export type CitizenRecord = Static<typeof CitizenRecord>;
export type ListQuery = Static<typeof ListQuery>;
export type Sort = NonNullable<ListQuery["sort"]>;
export type Order = NonNullable<ListQuery["order"]>;
export type CitizenType = NonNullable<ListQuery["type"]>;
