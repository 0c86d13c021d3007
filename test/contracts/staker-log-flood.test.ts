/**
 * The recipe tests use for a huge log answer: install StakerLogFlood's runtime code at the staker's
 * address, flood, then restore the staker. The logs must read as the staker's own Claim events.
 * (Each Claim costs ~1,770 gas and ~630 bytes of eth_getLogs JSON: about 17,000 fill viem's 10 MiB
 * cap. Wait for such a transaction by block, not by receipt: the receipt is over the cap too.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { encodeFunctionData, type Hex, isAddressEqual, parseEventLogs } from "viem";
import {
  neoTokyoStakerAbi,
  stakerLogFloodAbi,
  stakerLogFloodDeployedBytecode,
} from "../../contracts/generated/index.ts";
import { type AnvilNode, startAnvil } from "../../devnet/anvil.ts";
import { createDevnetClient, type DevnetClient } from "../../devnet/client.ts";
import { DEVNET_DEPLOYER, type DevnetDeployment, deployDevnet } from "../../devnet/deploy.ts";
import { DEVNET_SETUP_MS } from "../support/time.ts";

let node: AnvilNode;
let devnet: DevnetClient;
let deployment: DevnetDeployment;

beforeAll(async () => {
  node = await startAnvil();
  devnet = createDevnetClient(node.rpcUrl);
  deployment = await deployDevnet(devnet);
}, DEVNET_SETUP_MS);

afterAll(async () => {
  await node?.stop();
});

test("flooding from the staker's address logs the staker's Claim, and the staker comes back intact", async () => {
  const { staker, s1Citizen } = deployment.addresses;
  const stakerCode = (await devnet.getCode({ address: staker })) as Hex;
  await devnet.setCode({ address: staker, bytecode: stakerLogFloodDeployedBytecode });
  const hash = await devnet.sendTransaction({
    account: DEVNET_DEPLOYER,
    to: staker,
    data: encodeFunctionData({
      abi: stakerLogFloodAbi,
      functionName: "flood",
      args: [DEVNET_DEPLOYER, 50n],
    }),
    chain: null,
  });
  const receipt = await devnet.waitForTransactionReceipt({ hash });
  await devnet.setCode({ address: staker, bytecode: stakerCode });

  const claims = parseEventLogs({ abi: neoTokyoStakerAbi, eventName: "Claim", logs: receipt.logs });
  expect(claims).toHaveLength(50);
  expect(claims.every((log) => isAddressEqual(log.address, staker))).toBe(true);
  expect(claims.map((log) => log.args.reward)).toEqual(
    Array.from({ length: 50 }, (_, index) => BigInt(index)),
  );
  const restored = await devnet.readContract({
    address: staker,
    abi: neoTokyoStakerAbi,
    functionName: "S1_CITIZEN",
  });
  expect(isAddressEqual(restored, s1Citizen)).toBe(true);
});
