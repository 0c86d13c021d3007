/**
 * The listing's cursor: base64url of the JSON `{ s, o, k }`: the sort, the order and the values
 * of the last item's sort key (decimal strings: the sort column, then the tie-breakers). Pages
 * continue strictly after that key, so rows inserted between pages never shift the pages, and a
 * cursor from another sort or order is refused rather than misread.
 */
import { BadParameter } from "../../problems.ts";
import type { Order, Sort } from "./model.ts";

const UINT256_MAX = 2n ** 256n - 1n;

/**
 * Decimal digits of a uint256, leading zeros allowed (as many as the URL holds: the same number
 * gets the same answer); below 78 significant digits every number fits, so only 78 are compared.
 */
export function isUint256(value: string): boolean {
  if (!/^[0-9]+$/.test(value)) return false;
  const significant = value.replace(/^0+(?=.)/, "");
  return significant.length < 78 || (significant.length === 78 && BigInt(value) <= UINT256_MAX);
}

/** The canonical digits of a uint256 given as digits: "007" and "7" name one citizen. */
export function canonicalDigits(value: string): string {
  return value.length > 1 && value[0] === "0" ? BigInt(value).toString() : value;
}

export function encodeCursor(sort: Sort, order: Order, key: bigint[]): string {
  const payload = { s: sort, o: order, k: key.map(String) };
  return Buffer.from(JSON.stringify(payload)).toString("base64url");
}

/** The key values to continue after; throws BadParameter("cursor") for anything else. */
export function decodeCursor(
  cursor: string,
  sort: Sort,
  order: Order,
  keyLength: number,
): string[] {
  const invalid = (why: string) =>
    new BadParameter("cursor", `cursor ${why}; pass a nextCursor from this listing unchanged`);
  let payload: unknown;
  try {
    const json = Buffer.from(cursor, "base64url").toString("utf8");
    // Buffer decoding skips junk silently; a cursor must round-trip exactly.
    if (Buffer.from(json).toString("base64url") !== cursor) throw invalid("is not base64url");
    payload = JSON.parse(json);
  } catch {
    throw invalid("is not one this API issued");
  }
  if (typeof payload !== "object" || payload === null) throw invalid("is not one this API issued");
  const { s, o, k } = payload as Record<string, unknown>;
  if (s !== sort || o !== order) throw invalid("was made for another sort or order");
  if (
    !Array.isArray(k) ||
    k.length !== keyLength ||
    !k.every((value) => typeof value === "string" && isUint256(value))
  ) {
    throw invalid("is not one this API issued");
  }
  return k as string[];
}
