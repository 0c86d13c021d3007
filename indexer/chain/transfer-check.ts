import { type Address, type Hex, type PublicClient, pad, toEventSelector } from "viem";
import type { NodeClients } from "./block-receipts.ts";
import type { StakerContracts } from "./contracts.ts";
import { fetchLogs, type LogRangeGovernor, type RpcLog, type StakerLog } from "./logs.ts";
import {
  byBlock,
  reaskSuspects,
  replaceBlocks,
  type SuspectBlock,
  settleByReceipts,
} from "./missing-logs.ts";

/** ERC-20's and ERC-721's Transfer share this topic0 (ERC-721 indexes the token id too). */
const TRANSFER = toEventSelector("Transfer(address,address,uint256)");

/**
 * The chunk path's missing-log check, from a second source the staker cannot hide: every Stake
 * and Withdraw moves a token of a contract the staker names into or out of it (citizens and
 * vaults escrowed, BYTES and LP pulled in and paid back). One more eth_getLogs per span (the
 * Transfers of those contracts, fetchStakerTransfers), sized by the same governor as the
 * staker's own, whatever the range's length: the cost is per span, not per block.
 *
 * Each transaction's transfers are matched against the staker logs the answer holds for the
 * same transaction: a citizen moved in (out) needs a Stake (Withdraw) of that very citizen; a
 * vault an S1 citizen's; BYTES in a BYTES Stake, BYTES out a citizen's Withdraw; LP an LP
 * Stake or Withdraw, each at least as many as the transfers. A block with an unmatched transfer
 * is asked again by hash (reaskSuspects): more staker logs there than the answer held throws
 * StakerLogsMissing. As many is a plain transfer to or from the staker (someone sending it a
 * token), or a node that leaves the block's staker logs out of every answer: its receipts,
 * checked against its header's receiptsRoot, tell the two apart (settleByReceipts). The logs
 * returned are the answer's with such a block's taken from its receipts; a block no receipts
 * settle throws StakerLogsUnsettled (its chunk is parked).
 */
export async function checkStakerTransfersLogged(
  { client, receiptsClient }: NodeClients,
  contracts: StakerContracts,
  transfers: readonly RpcLog[],
  logs: readonly StakerLog[],
): Promise<{ logs: StakerLog[]; askedAgain: number; receiptsChecked: number; corrected: number }> {
  const supply = new Map<Hex, Map<string, number>>();
  const answered = new Map<bigint, number>();
  for (const log of logs) {
    answered.set(log.blockNumber, (answered.get(log.blockNumber) ?? 0) + 1);
    const keys = stakerLogKeys(log, contracts);
    const held = supply.get(log.transactionHash) ?? new Map<string, number>();
    for (const key of keys) held.set(key, (held.get(key) ?? 0) + 1);
    supply.set(log.transactionHash, held);
  }

  const demand = new Map<Hex, { blockNumber: bigint; blockHash: Hex; keys: Map<string, number> }>();
  const staker = pad(contracts.staker);
  for (const transfer of transfers) {
    const key = transferKey(transfer, contracts, staker);
    if (key === undefined) continue;
    const tx = transfer.transactionHash.toLowerCase() as Hex;
    const entry = demand.get(tx) ?? {
      blockNumber: BigInt(transfer.blockNumber),
      blockHash: transfer.blockHash,
      keys: new Map<string, number>(),
    };
    entry.keys.set(key, (entry.keys.get(key) ?? 0) + 1);
    demand.set(tx, entry);
  }

  const suspects = new Map<bigint, SuspectBlock>();
  for (const [tx, { blockNumber, blockHash, keys }] of demand) {
    const held = supply.get(tx);
    const unmatched = [...keys].some(([key, count]) => (held?.get(key) ?? 0) < count);
    if (unmatched && !suspects.has(blockNumber)) {
      suspects.set(blockNumber, {
        blockNumber,
        blockHash,
        answered: answered.get(blockNumber) ?? 0,
      });
    }
  }
  const blocks = [...suspects.values()].sort((a, b) => (a.blockNumber < b.blockNumber ? -1 : 1));
  await reaskSuspects(client, contracts.staker, blocks);
  if (blocks.length === 0)
    return { logs: [...logs], askedAgain: 0, receiptsChecked: 0, corrected: 0 };
  const headers = await Promise.all(
    blocks.map((block) => client.getBlock({ blockHash: block.blockHash })),
  );
  const { settled, checked, unsettled } = await settleByReceipts(
    receiptsClient,
    contracts.staker,
    headers,
    byBlock(logs),
  );
  if (unsettled) throw unsettled;
  return {
    logs: replaceBlocks(logs, settled),
    askedAgain: blocks.length,
    receiptsChecked: checked,
    corrected: settled.size,
  };
}

/**
 * The Transfer logs of the staker's tokens into and out of it in [from, to]. One filter for every
 * Transfer of the five contracts, each through the governor's spans, kept here when the staker
 * is their sender or recipient: a filter cannot say "from or to", so the two directions used to
 * be two queries a span. Under a provider's per-call budget the second one cost a third of the
 * backfill's log fetches (the mainnet-shaped bench: 603 -> 402 eth_getLogs); the price is the
 * answer's size, every Transfer of those tokens (trades, mints of claimed BYTES), not only the
 * staker's. It stays a request of its own, apart from the staker's logs: one answer holding
 * both could not tell a node that lacks a block from a block without logs.
 */
export async function fetchStakerTransfers(
  logClient: PublicClient,
  contracts: StakerContracts,
  from: bigint,
  to: bigint,
  governor: LogRangeGovernor,
): Promise<RpcLog[]> {
  const address = [
    contracts.s1Citizen,
    contracts.s2Citizen,
    contracts.vault,
    contracts.bytes,
    contracts.lp,
  ];
  const transfers = await fetchLogs(
    logClient,
    { address, topics: [TRANSFER] },
    from,
    to,
    governor,
    "the Transfers of the staker's tokens",
  );
  const staker = pad(contracts.staker);
  return transfers.filter(({ topics }) => {
    // A Transfer with unindexed parties has another shape: no token the staker names logs one.
    if (topics.length < 3) return false;
    return topics[1]!.toLowerCase() === staker || topics[2]!.toLowerCase() === staker;
  });
}

const citizenKey = (direction: "in" | "out", asset: Address, id: bigint) =>
  `${direction}:${asset}:${id}`;
const assetKey = (direction: "in" | "out", asset: Address) => `${direction}:${asset}`;
const ANY_CITIZEN_OUT = "out:citizen";

/** What a staker log accounts for: the keys a transfer of its transaction may ask for. */
function stakerLogKeys(log: StakerLog, contracts: StakerContracts): string[] {
  const { decoded } = log;
  if (decoded.eventName === "Claim") return [];
  const asset = decoded.args.asset.toLowerCase() as Address;
  const direction = decoded.eventName === "Stake" ? "in" : "out";
  const keys = [assetKey(direction, asset)];
  if (asset === contracts.s1Citizen || asset === contracts.s2Citizen) {
    keys.push(citizenKey(direction, asset, decoded.args.amountOrTokenId));
    if (direction === "out") keys.push(ANY_CITIZEN_OUT);
  }
  return keys;
}

/**
 * The staker log a transfer into or out of the staker needs in its transaction (`staker`: the
 * staker's address as a topic, made once per check).
 */
function transferKey(
  transfer: RpcLog,
  contracts: StakerContracts,
  staker: Hex,
): string | undefined {
  const token = transfer.address.toLowerCase() as Address;
  const { topics } = transfer;
  const from = topics[1]?.toLowerCase();
  const to = topics[2]?.toLowerCase();
  const id = topics[3];
  // A transfer from the staker to itself moves nothing.
  if (from === staker && to === staker) return undefined;
  const direction = to === staker ? "in" : "out";
  if (token === contracts.s1Citizen || token === contracts.s2Citizen) {
    return id === undefined ? undefined : citizenKey(direction, token, BigInt(id));
  }
  if (token === contracts.vault) return assetKey(direction, contracts.s1Citizen);
  if (token === contracts.bytes) {
    return direction === "in" ? assetKey("in", contracts.bytes) : ANY_CITIZEN_OUT;
  }
  if (token === contracts.lp) return assetKey(direction, contracts.lp);
  return undefined;
}
