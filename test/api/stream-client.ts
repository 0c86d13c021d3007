/**
 * A small Server-Sent Events client for the stream tests: fetch over real HTTP and a line parser
 * (WHATWG "event stream" rules for the fields the API uses), keeping the last event id as a
 * browser's EventSource does.
 */
export interface StreamEvent {
  event: string;
  id?: string;
  data: unknown;
}

export interface StreamClient {
  status: number;
  headers: Headers;
  events: StreamEvent[];
  /** The id a reconnect would send as Last-Event-ID. */
  lastEventId: string | undefined;
  comments: number;
  /** True once the server ended the stream. */
  ended: boolean;
  /** Resolves once `predicate` holds for the events so far. */
  until(predicate: (events: StreamEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

export async function openStream(
  url: string,
  headers: Record<string, string>,
): Promise<StreamClient> {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  const client: StreamClient = {
    status: response.status,
    headers: response.headers,
    events: [],
    lastEventId: headers["last-event-id"],
    comments: 0,
    ended: false,
    async until(predicate, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(client.events)) {
        if (client.ended) throw new Error("the stream ended first");
        if (Date.now() > deadline) {
          throw new Error(`no such events after ${timeoutMs} ms: ${JSON.stringify(client.events)}`);
        }
        await Bun.sleep(10);
      }
    },
    close: () => abort.abort(),
  };
  if (response.status !== 200 || !response.body) return client;
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    let fields: { event?: string; id?: string; data: string[] } = { data: [] };
    try {
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + 1);
          if (line === "") {
            if (fields.id !== undefined) client.lastEventId = fields.id;
            if (fields.data.length > 0) {
              client.events.push({
                event: fields.event ?? "message",
                id: fields.id,
                data: JSON.parse(fields.data.join("\n")),
              });
            }
            fields = { data: [] };
          } else if (line.startsWith(":")) {
            client.comments++;
          } else {
            const colon = line.indexOf(":");
            const name = line.slice(0, colon);
            const value = line.slice(colon + 1).replace(/^ /, "");
            if (name === "data") fields.data.push(value);
            else if (name === "event") fields.event = value;
            else if (name === "id") fields.id = value;
          }
        }
      }
    } catch {
      // Aborted by close().
    }
    client.ended = true;
  })();
  return client;
}

/** Applies a stream's events to a wallet's citizens, keyed `<type>:<id>`, as a dashboard would. */
export function assemble(events: StreamEvent[], into = new Map<string, unknown>()) {
  for (const { event, data } of events) {
    const body = data as { type?: string; id?: string; citizen?: { type: string; id: string } };
    if (event === "reset") into.clear();
    else if (event === "citizen")
      into.set(`${body.citizen!.type}:${body.citizen!.id}`, body.citizen);
    else if (event === "removed") into.delete(`${body.type}:${body.id}`);
  }
  return into;
}
