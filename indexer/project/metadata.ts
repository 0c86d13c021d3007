/** Name and image from a tokenURI, when the URI carries its JSON inline (as the citizens' do). */
export function parseTokenMetadata(uri: string | undefined): { name?: string; image?: string } {
  if (!uri) return {};
  const json = inlineJson(uri);
  if (json === undefined) return {};
  try {
    const metadata = JSON.parse(json) as { name?: unknown; image?: unknown };
    const name =
      typeof metadata.name === "string" && metadata.name !== "" ? metadata.name : undefined;
    const image =
      typeof metadata.image === "string" && /^https?:\/\//i.test(metadata.image)
        ? metadata.image
        : undefined;
    return { ...(name && { name }), ...(image && { image }) };
  } catch {
    return {};
  }
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
