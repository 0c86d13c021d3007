/**
 * The citizens the staker holds at a block, from the citizen contracts' own Transfer logs: a
 * second source beside the staker's views and our tables. A stake moves the citizen from the
 * staking wallet into the staker's escrow and a withdraw moves it out, and those logs are the
 * token contracts', which the staker cannot leave out.
 */
import { type Address, type PublicClient, parseAbiItem } from "viem";
import type { StakerContracts } from "../indexer/chain/contracts.ts";
import { isLogAnswerTooLarge, LogRangeTooLarge } from "../indexer/chain/logs.ts";
import { errorSummary } from "../lib/log.ts";

const TRANSFER = parseAbiItem(
  "event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)",
);

/** A citizen in the staker's escrow, and the wallet that sent it there. */
export interface EscrowedCitizen {
  season: 1 | 2;
  citizenId: bigint;
  /** The wallet whose transfer put the citizen in escrow: the stake's account. */
  wallet: string;
  transactionHash: string;
}

/** `${season}:${citizenId}`, the key every verify comparison uses. */
export const citizenKey = (season: number, citizenId: bigint) => `${season}:${citizenId}`;

/**
 * Every citizen the staker holds after block `to`, from the Transfer logs of both citizen
 * contracts into and out of it in [from, to], fetched `maxLogRange` blocks at a time (halved
 * while the node refuses a range as too large).
 */
export async function escrowedCitizens(
  client: PublicClient,
  contracts: StakerContracts,
  range: { from: bigint; to: bigint; maxLogRange: number },
): Promise<Map<string, EscrowedCitizen>> {
  const seasons = new Map<string, 1 | 2>([
    [contracts.s1Citizen.toLowerCase(), 1],
    [contracts.s2Citizen.toLowerCase(), 2],
  ]);
  const held = new Map<string, EscrowedCitizen>();
  let span = BigInt(range.maxLogRange);
  let start = range.from;
  while (start <= range.to) {
    const end = start + span - 1n < range.to ? start + span - 1n : range.to;
    const query = (args: { from: Address } | { to: Address }) =>
      client.getLogs({
        address: [contracts.s1Citizen, contracts.s2Citizen],
        event: TRANSFER,
        args,
        fromBlock: start,
        toBlock: end,
        strict: true,
      });
    let logs: Awaited<ReturnType<typeof query>>;
    try {
      const [into, out] = await Promise.all([
        query({ to: contracts.staker }),
        query({ from: contracts.staker }),
      ]);
      logs = [...into, ...out];
    } catch (error) {
      if (!isLogAnswerTooLarge(error)) throw error;
      if (span > 1n) {
        span /= 2n;
        continue;
      }
      throw new LogRangeTooLarge(
        `the citizen contracts' transfers of block ${start} alone are more than the node returns in one answer (${errorSummary(error)})`,
      );
    }
    logs.sort((a, b) =>
      a.blockNumber !== b.blockNumber
        ? a.blockNumber < b.blockNumber
          ? -1
          : 1
        : a.logIndex - b.logIndex,
    );
    for (const log of logs) {
      const season = seasons.get(log.address.toLowerCase());
      if (season === undefined) continue;
      const key = citizenKey(season, log.args.tokenId);
      if (log.args.to.toLowerCase() === contracts.staker.toLowerCase()) {
        held.set(key, {
          season,
          citizenId: log.args.tokenId,
          wallet: log.args.from.toLowerCase(),
          transactionHash: log.transactionHash,
        });
      } else {
        held.delete(key);
      }
    }
    start = end + 1n;
  }
  return held;
}
