/**
 * `devnet --dump-state FILE` saves the chain when the node stops; `--load-state FILE` brings the
 * same chain back, old states included, and rewrites the devnet description for it.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../devnet/anvil.ts";
import { createDevnetClient } from "../../devnet/client.ts";
import { readDeploymentFile } from "../../devnet/deploy.ts";
import { runCommand, startCommand } from "../support/commands.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

const directory = mkdtempSync(join(tmpdir(), "cs-devnet-state-"));
const state = join(directory, "chain.json");

afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Starts the devnet and waits until it keeps the node up; returns the node's chain facts. */
async function devnet(args: string[], out: string) {
  const port = await freePort();
  const process = startCommand(
    ["scripts/devnet.ts", "--port", String(port), "--out", out, ...args],
    {
      LOG_LEVEL: "warn",
    },
  );
  await process.waitForLine(/node stays up/, DEVNET_SETUP_MS);
  const deployment = await readDeploymentFile(out);
  const client = createDevnetClient(deployment.rpcUrl);
  const head = await client.getBlock();
  const stakerCodeAtDeploy = await client.getCode({
    address: deployment.addresses.staker,
    blockNumber: deployment.deployBlock,
  });
  return { process, deployment, head, stakerCodeAtDeploy, port };
}

test(
  "a devnet saved with --dump-state comes back with --load-state: same blocks, same contracts, a description that fits",
  async () => {
    const first = await devnet(
      ["--events", "20", "--dump-state", state],
      join(directory, "a.json"),
    );
    expect(await first.process.stop()).toBe(0);

    const second = await devnet(["--load-state", state], join(directory, "b.json"));
    try {
      expect(second.head.hash).toBe(first.head.hash);
      expect(second.head.number).toBe(first.head.number);
      // Old states survive the reload: the indexer reads views at each stake's block.
      expect(second.stakerCodeAtDeploy).toBe(first.stakerCodeAtDeploy);
      expect(second.stakerCodeAtDeploy?.length).toBeGreaterThan(2);
      expect(second.deployment).toEqual({
        ...first.deployment,
        rpcUrl: `http://127.0.0.1:${second.port}`,
      });
    } finally {
      expect(await second.process.stop()).toBe(0);
    }
  },
  3 * DEVNET_SETUP_MS,
);

test("--load-state refuses scenario flags and a state without its description (exit 2)", async () => {
  const stray = join(directory, "stray.json");
  await Bun.write(stray, readFileSync(state));
  const [withEvents, noDescription] = await Promise.all([
    runCommand(["scripts/devnet.ts", "--load-state", state, "--events", "5"], {}),
    runCommand(["scripts/devnet.ts", "--load-state", stray], {}),
  ]);
  expect(withEvents.code).toBe(2);
  expect(withEvents.stderr).toContain("drop --events");
  expect(noDescription.code).toBe(2);
  expect(noDescription.stderr).toContain("no devnet description beside it");
  expect(readFileSync(`${state}.devnet.json`, "utf8")).toContain('"staker"');
});
