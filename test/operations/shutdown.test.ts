/**
 * The one shutdown every long-running process shares (lib/shutdown.ts), in a process of its own:
 * SIGTERM lets the current work finish, and work that outlasts SHUTDOWN_GRACE_MS does not keep
 * the process alive. Either way it exits 0.
 */
import { describe, expect, test } from "bun:test";
import { startCommand } from "../support/commands.ts";
import { LOADED_MACHINE_MS } from "../support/time.ts";

const GRACE_MS = 500;

/** A process whose close takes `closeMs` (never ending when null), kept alive until a signal. */
const processClosingIn = (closeMs: number | null) =>
  startCommand(
    [
      "-e",
      `import { closeOnSignal } from "./lib/shutdown.ts";
       import { logger } from "./lib/log.ts";
       const close = () => new Promise((resolve) => { ${closeMs === null ? "" : `setTimeout(() => { console.log("closed"); resolve(); }, ${closeMs});`} });
       closeOnSignal(close, { log: logger("shutdown-test") });
       setInterval(() => {}, 1_000);
       console.log("working");`,
    ],
    { SHUTDOWN_GRACE_MS: String(GRACE_MS), LOG_LEVEL: "info" },
  );

describe("stopping on SIGTERM", () => {
  test("current work finishes, then the process exits 0", async () => {
    const child = processClosingIn(200);
    await child.waitForLine(/^working$/);
    expect(await child.stop()).toBe(0);
    expect(child.lines).toContain("closed");
    expect(child.lines.join("\n")).not.toContain("grace period over");
  });

  test("work that outlasts the grace period does not keep the process alive", async () => {
    const child = processClosingIn(null);
    await child.waitForLine(/^working$/);
    const started = performance.now();
    expect(await child.stop()).toBe(0);
    // The grace period, then the exit: never the work's end, which does not come.
    expect(performance.now() - started).toBeLessThan(GRACE_MS + LOADED_MACHINE_MS);
    expect(child.lines.join("\n")).toContain("grace period over");
  });
});
