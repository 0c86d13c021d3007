import { describe, expect, setSystemTime, test } from "bun:test";
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

describe("an outage's failures settling after its end", () => {
  const unreachable = new Error("All sentinels are unreachable. Retrying from scratch after 10ms.");
  const said = (lines: { msg: string }[]) => lines.map((line) => line.msg);

  test("a failure within the settling window after an outage's end is not a second outage", async () => {
    const { log, lines } = capturedLogger();
    const outages = createOutageReporter("REDIS_SENTINELS", log, undefined, undefined, 100);
    // The clock stands still, so the failures fall within the window however loaded the machine.
    setSystemTime(Date.now());
    try {
      outages.error(new Error("Connection is closed."));
      outages.recovered();
      // Another connection of the process, still asking the sentinels, then ready too.
      outages.error(unreachable);
      outages.recovered();
    } finally {
      setSystemTime();
    }
    // Past the window: no warning was left waiting.
    await Bun.sleep(150);
    expect(said(lines)).toEqual([
      "REDIS_SENTINELS unreachable; retrying until it is back",
      "REDIS_SENTINELS reachable again",
    ]);
  });

  test("one that outlasts the window is warned of when the window ends", async () => {
    const { log, lines } = capturedLogger();
    const outages = createOutageReporter("REDIS_SENTINELS", log, undefined, undefined, 100);
    setSystemTime(Date.now());
    try {
      outages.error(unreachable);
      outages.recovered();
      outages.error(unreachable);
    } finally {
      setSystemTime();
    }
    expect(said(lines)).toHaveLength(2);
    await Bun.sleep(150);
    outages.recovered();
    expect(said(lines)).toEqual([
      "REDIS_SENTINELS unreachable; retrying until it is back",
      "REDIS_SENTINELS reachable again",
      "REDIS_SENTINELS unreachable; retrying until it is back",
      "REDIS_SENTINELS reachable again",
    ]);
  });

  test("a service failing again and again within the window is warned of past it", () => {
    const { log, lines } = capturedLogger();
    const outages = createOutageReporter("REDIS_SENTINELS", log, undefined, undefined, 1_000);
    const start = Date.now();
    try {
      setSystemTime(start);
      outages.error(unreachable);
      outages.recovered();
      // Unwarned outages that end do not move the window: the third failure is past it.
      for (const at of [400, 800, 1_200]) {
        setSystemTime(start + at);
        outages.error(unreachable);
        outages.recovered();
      }
    } finally {
      setSystemTime();
    }
    expect(said(lines)).toEqual([
      "REDIS_SENTINELS unreachable; retrying until it is back",
      "REDIS_SENTINELS reachable again",
      "REDIS_SENTINELS unreachable; retrying until it is back",
      "REDIS_SENTINELS reachable again",
    ]);
  });
});
