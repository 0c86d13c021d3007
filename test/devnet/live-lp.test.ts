/**
 * The live scenario (`scripts/devnet.ts --live`) must never send an LP stake the chain refuses.
 * Each LP stake restarts the position's timelock, so a wallet that keeps staking never withdraws
 * and, in a long run, stakes its last LP token; a stake past it reverted in the token's
 * transferFrom and stopped the devnet. Wallets minted a little LP reach that point in a few blocks.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { lpTokenAbi, neoTokyoStakerAbi } from "../../contracts/generated/index.ts";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { type DevnetDeployment, deployDevnet } from "../../devnet/deploy.ts";
import { Scenario } from "../../devnet/scenario.ts";
import { LP_STAKE_MAX } from "../../devnet/scenario-actions.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

const LP_PER_WALLET = 60n * 10n ** 18n;
const LIVE_BLOCKS = 150;

let node: AnvilNode;
let client: DevnetClient;
let deployment: DevnetDeployment;

beforeAll(async () => {
  // Live blocks are few, so history stays small; pruning keeps memory flat regardless.
  node = await startAnvil({ pruneHistory: 64 });
  client = createDevnetClient(node.rpcUrl);
  deployment = await deployDevnet(client);
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

test("live blocks go on when a wallet holds less LP than a stake may draw", async () => {
  const scenario = await Scenario.prepare(client, deployment, {
    seed: "live-lp",
    wallets: 2,
    lpPerWallet: LP_PER_WALLET,
  });
  const stop = new AbortController();
  let lowOnLp = 0;
  await scenario.live({
    intervalMs: 0,
    signal: stop.signal,
    onBlock: (progress) => {
      // The case that reverted: a wallet holding less LP than a stake may draw.
      if (scenario.wallets.some((wallet) => wallet.lpHeld < LP_STAKE_MAX)) lowOnLp++;
      if (progress.blocks >= LIVE_BLOCKS) stop.abort();
    },
  });
  expect(lowOnLp).toBeGreaterThan(LIVE_BLOCKS / 2);

  // The scenario's model of each wallet's LP equals the chain's.
  for (const wallet of scenario.wallets) {
    const [amount] = await client.readContract({
      address: deployment.addresses.staker,
      abi: neoTokyoStakerAbi,
      functionName: "stakerLPPosition",
      args: [wallet.address],
    });
    const held = await client.readContract({
      address: deployment.addresses.lp,
      abi: lpTokenAbi,
      functionName: "balanceOf",
      args: [wallet.address],
    });
    expect({ staked: amount, held }).toEqual({ staked: wallet.lp.amount, held: wallet.lpHeld });
  }
});
