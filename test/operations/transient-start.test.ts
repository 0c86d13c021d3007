/**
 * A node that resets connections or answers 503 while a process starts is an outage, not a
 * wrong setting: `follow` and `worker` wait for it with one warning and start once it answers,
 * `status` exits 1 naming the cause. Only a definite answer (no code at STAKER_ADDRESS, a
 * contract that is not a staker) is a refusal, exit 2. Once running, an outage of the node is
 * one warning too, however many jobs fail during it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { Misconfigured, RpcFailed } from "../../lib/connection-checks.ts";
import { Unreachable } from "../../lib/fail.ts";
import { checkChainSettings } from "../../ops/chain-settings.ts";
import { createScratchDatabase } from "../../scratch/database.ts";
import { createScratchRedisPrefix } from "../../scratch/redis.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import { startFailingReadsProxy } from "../support/failing-reads-proxy.ts";
import { startTestIndexer } from "../support/indexer.ts";
import { startRpcFaultProxy } from "../support/rpc-fault-proxy.ts";
import { type ScenarioChain, startScenarioChain } from "../support/scenario-chain.ts";

let devnet: ScenarioChain;
let proxy: Awaited<ReturnType<typeof startFailingReadsProxy>>;
let database: Awaited<ReturnType<typeof createScratchDatabase>>;
const redis = createScratchRedisPrefix("transient");
/** An address with no code, and a contract that is not a staker. */
const EOA = "0x000000000000000000000000000000000000dEaD";

const settings = (overrides: Record<string, string | undefined> = {}) => ({
  RPC_URL: proxy.url,
  STAKER_ADDRESS: devnet.deployment.addresses.staker,
  START_BLOCK: String(devnet.deployment.deployBlock),
  DATABASE_URL: database.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  CHAIN_ID: undefined,
  RPC_WS_URL: undefined,
  METRICS_PORT: undefined,
  LOG_LEVEL: "info",
  ...overrides,
});

/** The staker's first reads, each failing a few times: the process must get through all. */
function failFirstReads() {
  proxy.fail("eth_chainId", "reset", 2);
  proxy.fail("eth_getCode", "503", 2);
  proxy.fail("eth_call", "reset", 2);
}

beforeAll(async () => {
  [devnet, database] = await Promise.all([
    startScenarioChain({ events: 20, seed: "transient-start" }),
    createScratchDatabase("transient"),
  ]);
  proxy = await startFailingReadsProxy(devnet.node.rpcUrl);
});

// A test that fails halfway must not leave its faults to the next.
beforeEach(() => proxy.heal());

afterAll(async () => {
  await proxy?.stop();
  await devnet?.stop();
  await database?.drop();
  await redis.clean();
});

describe("the start-up check tells an outage from a wrong setting", () => {
  const chain = () => ({
    rpcUrl: proxy.url,
    rpcSource: "RPC_URL",
    stakerSource: "STAKER_ADDRESS",
    startBlock: async () => devnet.deployment.deployBlock,
    staker: devnet.deployment.addresses.staker,
  });

  test("a reset or a 503 on the chain id, the code or S1_CITIZEN is Unreachable, naming the read", async () => {
    const cases = [
      ["eth_chainId", "reset", /^RPC_URL .*eth_chainId/],
      ["eth_chainId", "503", /^RPC_URL .*eth_chainId.*503/],
      ["eth_getCode", "reset", /^RPC_URL .*eth_getCode of STAKER_ADDRESS/],
      ["eth_getCode", "503", /^RPC_URL .*eth_getCode of STAKER_ADDRESS.*503/],
      ["eth_call", "reset", /^RPC_URL .*S1_CITIZEN\(\) of STAKER_ADDRESS/],
      ["eth_call", "503", /^RPC_URL .*S1_CITIZEN\(\) of STAKER_ADDRESS.*503/],
    ] as const;
    for (const [method, fault, message] of cases) {
      proxy.fail(method, fault, 1);
      const check = checkChainSettings(chain());
      await expect(check).rejects.toThrow(Unreachable);
      await expect(check).rejects.toThrow(message);
      expect(proxy.pending()).toBe(0);
    }
    await expect(checkChainSettings(chain())).resolves.toBe(31337);
  });

  test("JSON-RPC errors: a limit, a busy node or a block it lacks yet are Unreachable; a method it does not serve is RpcFailed", async () => {
    const refusing = startRpcFaultProxy({
      upstream: devnet.node.rpcUrl,
      faultRate: 0,
      holdMs: 0,
    });
    try {
      const through = { ...chain(), rpcUrl: refusing.url };
      const answers = [
        [{ code: -32005, message: "daily request count exceeded" }, Unreachable],
        [{ code: -32001, message: "header not found" }, Unreachable],
        [{ code: -32000, message: "missing trie node" }, Unreachable],
        [{ code: 429, message: "too many requests" }, Unreachable],
        [{ code: -32601, message: "the method eth_getCode does not exist" }, RpcFailed],
      ] as const;
      for (const [answer, kind] of answers) {
        refusing.setRefusedMethods({ eth_getCode: answer });
        const check = checkChainSettings(through);
        await expect(check).rejects.toThrow(kind);
        await expect(check).rejects.toThrow(/^RPC_URL .*eth_getCode of STAKER_ADDRESS/);
      }
    } finally {
      refusing.stop();
    }
  });

  test("no code at the address, or a contract that is not a staker, is Misconfigured", async () => {
    await expect(checkChainSettings({ ...chain(), staker: EOA })).rejects.toThrow(Misconfigured);
    await expect(
      checkChainSettings({ ...chain(), staker: devnet.deployment.addresses.bytes }),
    ).rejects.toThrow(/^STAKER_ADDRESS .*not a NeoTokyoStaker/);
  });
});

describe("commands", () => {
  test("`status` while the node resets S1_CITIZEN, or answers 503 to getCode, exits 1 naming the cause", async () => {
    proxy.fail("eth_call", "reset", Infinity);
    const reset = await runCommand(["scripts/cli.ts", "status"], settings({ LOG_LEVEL: "warn" }));
    proxy.fail("eth_call", "reset", 0);
    proxy.fail("eth_getCode", "503", Infinity);
    const unavailable = await runCommand(
      ["scripts/cli.ts", "status"],
      settings({ LOG_LEVEL: "warn" }),
    );
    proxy.fail("eth_getCode", "503", 0);
    for (const [result, cause] of [
      [reset, /S1_CITIZEN\(\).*(reset|closed|ECONNRESET)/i],
      [unavailable, /eth_getCode.*503/],
    ] as const) {
      const stderr = result.stderr.trim();
      expect({ code: result.code, stderr }).toMatchObject({ code: 1 });
      expect(stderr.split("\n")).toHaveLength(1);
      expect(stderr).toStartWith("error: RPC_URL");
      expect(stderr).toMatch(cause);
      expect(stderr).not.toContain("not a NeoTokyoStaker");
    }
  }, 60_000);

  for (const command of ["follow", "worker"] as const) {
    test(`\`${command}\` waits, with one warning, through resets and 503s on the staker's first reads, then starts`, async () => {
      failFirstReads();
      const process = startCommand(["scripts/cli.ts", command], settings());
      try {
        const started = command === "follow" ? /"msg":"following"/ : /worker taking chunk jobs/;
        await process.waitForLine(started, 60_000);
        expect(proxy.pending()).toBe(0);
        const warnings = process.lines.filter((line) => line.includes('"level":"warn"'));
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toContain("waiting for a service to answer");
        expect(process.child.exitCode).toBeNull();
      } finally {
        await process.stop();
      }
    }, 90_000);
  }

  test("`follow` with an address without code and `worker` with a contract that is not a staker exit 2 at once", async () => {
    const [follow, worker] = await Promise.all([
      runCommand(["scripts/cli.ts", "follow"], settings({ STAKER_ADDRESS: EOA })),
      runCommand(
        ["scripts/cli.ts", "worker"],
        settings({ STAKER_ADDRESS: devnet.deployment.addresses.bytes }),
      ),
    ]);
    expect({ code: follow.code, stderr: follow.stderr.trim() }).toMatchObject({ code: 2 });
    expect(follow.stderr).toContain("no contract at this address");
    expect({ code: worker.code, stderr: worker.stderr.trim() }).toMatchObject({ code: 2 });
    expect(worker.stderr).toContain("not a NeoTokyoStaker");
  }, 60_000);
});

describe("while running", () => {
  test("a worker whose node answers 503 to every getLogs for a while warns once, naming RPC_URL, and catches up", async () => {
    const harness = await startTestIndexer({
      label: "transient-run",
      rpcUrl: proxy.url,
      staker: devnet.deployment.addresses.staker,
      options: { chunkSize: 2 },
    });
    const worker = startCommand(
      ["scripts/cli.ts", "worker"],
      harness.cliEnv({ CONCURRENCY: "4", LOG_LEVEL: "info" }),
    );
    try {
      await worker.waitForLine(/worker taking chunk jobs/, 60_000);
      proxy.fail("eth_getLogs", "503", Infinity);
      const { to } = await harness.indexer.enqueueBackfill({
        startBlock: devnet.deployment.deployBlock,
      });
      // Several chunk jobs fail (each after the transport's own retries) before the node is back.
      const deadline = Date.now() + 90_000;
      while ((await harness.indexer.queues.chunks.getJobCountByTypes("delayed")) < 2) {
        if (Date.now() > deadline) throw new Error("no chunk job failed during the outage");
        await Bun.sleep(100);
      }
      proxy.heal();
      await harness.waitForBlock(to, 120_000);
      const warnings = worker.lines.filter((line) => line.includes('"level":"warn"'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain("RPC_URL unreachable");
      await worker.waitForLine(/RPC_URL reachable again/, 30_000);
    } finally {
      await worker.stop();
      await harness.cleanup();
    }
  }, 240_000);
});
