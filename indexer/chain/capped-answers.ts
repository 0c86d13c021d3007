import { ResponseBodyTooLargeError } from "viem";

/**
 * The largest answer taken (viem's default cap): a larger one fails as viem's
 * ResponseBodyTooLargeError, which range-refusals.ts reads as "ask eth_getLogs for fewer blocks".
 */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * `fetchFn` with the answer's size capped before viem reads it, so the transport's own cap can be
 * off (`maxResponseBodySize: false`) and viem reads the body with one native `response.text()`.
 * When viem caps an answer itself, it reads the body as a stream and decodes it piece by piece
 * into a string built up chunk by chunk, every piece garbage: a backfill's answers are tens of
 * megabytes. Read whole, a worker's peak RSS over the 100k backfill of bench/backfill.ts fell by
 * about 27 MB; its CPU did not change beyond the machine's noise.
 *
 * An answer that declares its length (Content-Length, uncompressed) is refused at once when too
 * large and otherwise passed on untouched. Any other (chunked, or compressed, whose declared
 * length is not what arrives) is read here with its bytes counted as they arrive, as viem would.
 */
export function cappedAnswers(fetchFn: Fetch, maxBytes = MAX_ANSWER_BYTES): Fetch {
  return async (input, init) => {
    const response = await fetchFn(input, init);
    const declared = response.headers.get("content-length");
    if (declared !== null && !response.headers.has("content-encoding")) {
      const size = Number(declared);
      if (size > maxBytes) {
        await response.body?.cancel();
        throw new ResponseBodyTooLargeError({ maxSize: maxBytes, size });
      }
      return response;
    }
    if (!response.body) return response;
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > maxBytes) {
          await reader.cancel();
          throw new ResponseBodyTooLargeError({ maxSize: maxBytes, size });
        }
        chunks.push(value);
      }
    } finally {
      reader.releaseLock();
    }
    const headers = new Headers(response.headers);
    // The body below is the decoded one.
    headers.delete("content-encoding");
    headers.delete("content-length");
    return new Response(Buffer.concat(chunks), {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };
}
