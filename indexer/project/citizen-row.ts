import type { CitizenRow, ReadFailureRow } from "../../db/schema.ts";
import { HAND_CLASS } from "../../lib/vocabulary.ts";
import type { CitizenReading, TokenUriReading } from "../chain/citizen-reads.ts";
import { parseTokenMetadata } from "./metadata.ts";

/**
 * The citizens row for what was read of a citizen. Metadata is optional (docs/api-fields.md: the name
 * falls back to "Citizen #id"): when the tokenURI reverted or holds nothing readable, the row
 * goes without name and image, and the failure is recorded for the operator.
 */
export function citizenRowOf(
  reading: CitizenReading,
  blockNumber: bigint,
): { row: CitizenRow; failure?: ReadFailureRow } {
  const metadata = metadataOf(reading.tokenUri);
  const { tokenUri: _, ...components } = reading;
  const row: CitizenRow = {
    ...components,
    ...(reading.season === 1 && { isHand: reading.identityClass === HAND_CLASS }),
    name: metadata.name ?? null,
    image: metadata.image ?? null,
  };
  if (metadata.unreadable === undefined) return { row };
  return {
    row,
    failure: {
      season: reading.season,
      citizenId: reading.citizenId,
      read: "tokenURI",
      reason: metadata.unreadable,
      blockNumber,
    },
  };
}

/** Name and image from a tokenURI reading, or why there are none. */
export function metadataOf(tokenUri: TokenUriReading) {
  return "reverted" in tokenUri
    ? { unreadable: `tokenURI reverted: ${tokenUri.reverted}`, name: undefined, image: undefined }
    : parseTokenMetadata(tokenUri.uri);
}
