/**
 * An endpoint takes the query parameters its `t` schema declares, each once. Elysia's query
 * parser keeps the last of a repeated parameter and its validation passes over undeclared ones,
 * so `address=A&address=B` answered for B alone and a misspelt `limt=5` (or `block=` on the
 * stream) was ignored: the client got an answer to a question it did not ask.
 */
import type { TObject } from "@sinclair/typebox";
import { BadParameter } from "./problems.ts";

/** A parameter name echoed in a problem is cut to this many characters. */
const ECHOED_NAME = 64;

/**
 * A transform hook (before validation) refusing, with a 400 naming it, the first query parameter
 * that `schema` does not declare or that comes twice. Names are decoded as Elysia decodes them, so
 * `%61ddress` is `address` given again.
 */
export function refuseUnexpectedParameters(schema: TObject) {
  const declared = new Set(Object.keys(schema.properties));
  const takes = [...declared].join(", ");
  return ({ request }: { request: Request }) => {
    const { url } = request;
    const start = url.indexOf("?");
    if (start === -1) return;
    const seen = new Set<string>();
    for (const given of new URLSearchParams(url.slice(start + 1)).keys()) {
      const name = given.slice(0, ECHOED_NAME);
      if (!declared.has(given)) {
        throw new BadParameter(
          name,
          `${name} is not a parameter of this endpoint; it takes ${takes}`,
        );
      }
      if (seen.has(given)) {
        throw new BadParameter(name, `${name} is given more than once; give it once`);
      }
      seen.add(given);
    }
  };
}
