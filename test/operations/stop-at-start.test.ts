/**
 * A long-running command stopped the moment it says it runs still stops cleanly: its SIGTERM
 * handler is in place before its first line, so a supervisor that signals as soon as it sees
 * the line gets exit 0, not the 143 of a process killed by the signal.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { startCommand } from "../support/commands.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

let devnet: ScenarioChain;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("stop-at-start");

const settings = () => ({
  RPC_URL: devnet.node.rpcUrl,
  STAKER_ADDRESS: devnet.deployment.addresses.staker,
  START_BLOCK: String(devnet.deployment.deployBlock),
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  CHAIN_ID: undefined,
  RPC_WS_URL: undefined,
  METRICS_PORT: undefined,
  PORT: "0",
  LOG_LEVEL: "info",
});

beforeAll(async () => {
  [devnet, database] = await Promise.all([
    startScenarioChain({ events: 10, seed: "stop-at-start" }),
    createScratchDatabase("stop_at_start"),
  ]);
});

afterAll(async () => {
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

describe("SIGTERM right after a long-running command's first line", () => {
  const cases = [
    ["follow", /"msg":"following"/],
    ["worker", /"msg":"worker taking chunk jobs"/],
    ["api", /"msg":"listening"/],
  ] as const;
  for (const [command, started] of cases) {
    test(`\`${command}\` exits 0`, async () => {
      const process = startCommand(["scripts/cli.ts", command], settings());
      try {
        await process.waitForLine(started, 60_000);
      } finally {
        const code = await process.stop();
        expect({ command, code }).toEqual({ command, code: 0 });
      }
      expect(process.lines.join("\n")).toContain("stopping: finishing current work");
    }, 90_000);
  }
});

describe("SIGTERM or SIGINT while a long-running command still waits for its services", () => {
  // Closed ports: Postgres and the node never answer, so the command waits for them.
  const unreachable = () => ({
    ...settings(),
    DATABASE_URL: "postgres://postgres@127.0.0.1:2/citizen_staking",
    RPC_URL: "http://127.0.0.1:1",
  });
  for (const command of ["follow", "worker"] as const) {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      test(`\`${command}\` exits 0 on ${signal}`, async () => {
        const process = startCommand(["scripts/cli.ts", command], unreachable());
        try {
          await process.waitForLine(/waiting for a service to answer/, 60_000);
        } finally {
          process.child.kill(signal);
          const code = await process.stop();
          expect({ command, signal, code }).toEqual({ command, signal, code: 0 });
        }
      }, 90_000);
    }
  }
});
