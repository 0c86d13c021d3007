import { describe, expect, test } from "bun:test";
import pino from "pino";
import { isConnectionFailure } from "../../lib/connection-checks.ts";
import { createOutageReporter } from "../../lib/outages.ts";

/** The lines a logger printed, parsed. */
function capturedLogger() {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

describe("which errors of a long-running process's connections are an outage", () => {
  test("ioredis's own messages: a dropped socket, a timed-out connect, no sentinel reached", () => {
    for (const message of [
      "Connection is closed.",
      "connect ETIMEDOUT",
      "All sentinels are unreachable. Retrying from scratch after 10ms.",
    ]) {
      expect(isConnectionFailure(new Error(message))).toBe(true);
    }
    expect(isConnectionFailure({ code: "ECONNREFUSED" })).toBe(true);
  });

  test("anything else is not: a refused password, a bad command", () => {
    expect(isConnectionFailure(new Error("WRONGPASS invalid username-password pair"))).toBe(false);
    expect(isConnectionFailure(new Error("ERR unknown command 'FOO'"))).toBe(false);
  });

  test("no sentinel reached in a failover is one warning and one line when it ends", () => {
    const { log, lines } = capturedLogger();
    const outages = createOutageReporter("REDIS_SENTINELS", log);
    const unreachable = new Error(
      "All sentinels are unreachable. Retrying from scratch after 10ms.",
    );
    outages.error(unreachable);
    outages.error(unreachable);
    outages.recovered();
    expect(lines.map(({ level, msg }) => [level, msg])).toEqual([
      [40, "REDIS_SENTINELS unreachable; retrying until it is back"],
      [30, "REDIS_SENTINELS reachable again"],
    ]);
  });
});
