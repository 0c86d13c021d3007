/**
 * Name and image from a tokenURI, when the URI carries its JSON inline (as the citizens' do).
 * `unreadable` says why nothing could be taken from it, for the operator's list of read failures;
 * a readable document without a name is not a failure (the API's fallback name is the answer).
 */
export function parseTokenMetadata(uri: string): {
  name?: string;
  image?: string;
  unreadable?: string;
} {
  if (uri === "") return { unreadable: "tokenURI is empty" };
  const json = inlineJson(uri);
  if (json === undefined) {
    return { unreadable: `tokenURI is not inline JSON: ${uri.slice(0, 80)}` };
  }
  let metadata: { name?: unknown; image?: unknown };
  try {
    metadata = JSON.parse(json) as { name?: unknown; image?: unknown };
  } catch {
    return { unreadable: "tokenURI's JSON does not parse" };
  }
  if (metadata === null || typeof metadata !== "object") {
    return { unreadable: "tokenURI's JSON is not an object" };
  }
  const name =
    typeof metadata.name === "string" && metadata.name !== "" ? metadata.name : undefined;
  const image =
    typeof metadata.image === "string" && /^https?:\/\//i.test(metadata.image)
      ? metadata.image
      : undefined;
  return { ...(name && { name }), ...(image && { image }) };
}

function inlineJson(uri: string): string | undefined {
  const match = /^data:application\/json(;[^,]*)?,(.*)$/s.exec(uri);
  if (!match) return undefined;
  const [, parameters = "", payload = ""] = match;
  if (parameters.includes(";base64")) return Buffer.from(payload, "base64").toString("utf8");
  try {
    return decodeURIComponent(payload);
  } catch {
    return payload;
  }
}
