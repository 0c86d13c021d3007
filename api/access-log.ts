/**
 * One JSON line per request: method, path (no query string, which could hold an address a user
 * wants kept out of logs), status and ms; tokens and headers are never logged. Below the info
 * level the hooks are not installed at all, so a quiet API pays nothing for them per request.
 */
import { Elysia } from "elysia";
import type { Logger } from "pino";

export function accessLog(log: Logger) {
  if (!log.isLevelEnabled("info")) return new Elysia({ name: "access-log" });
  const started = new WeakMap<Request, number>();
  return new Elysia({ name: "access-log" })
    .onRequest(({ request }) => {
      started.set(request, performance.now());
    })
    .onAfterResponse({ as: "global" }, ({ request, path, set, responseValue }) => {
      const status = responseValue instanceof Response ? responseValue.status : set.status;
      const begun = started.get(request);
      log.info(
        {
          method: request.method,
          path,
          status,
          ms: begun === undefined ? undefined : Math.round((performance.now() - begun) * 10) / 10,
        },
        "request",
      );
    });
}
