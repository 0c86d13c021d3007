import type { Block, Hash, Hex, PublicClient } from "viem";
import type { CitizenRow, StakerEventRow } from "../../db/schema.ts";
import { type BlockReads, createBlockReads } from "../chain/block-reads.ts";
import type { StakerContracts } from "../chain/contracts.ts";
import { PrestateUnavailable, readPrestate } from "../chain/stake-prestate.ts";
import {
  type ConfigurationAtBlock,
  type StakeConfiguration,
  type StakeReads,
  tryReadConfigurations,
} from "../chain/stake-reads.ts";
import { splitOption } from "../project/event-rows.ts";
import { type ConfigurationRead, effectiveVault, figuresExplain } from "../project/stake-facts.ts";

/** A stake as read at the end of its block (or a block that shows its entry). */
export interface StakeAsRead {
  event: StakerEventRow;
  citizen: CitizenRow;
  reads: StakeReads;
  /** The BYTES bonus inside `reads.points` deposited after the stake. */
  laterBonus: bigint;
}

/** A stake's reads with the configuration figures that give its points, and where they were read. */
export interface ExplainedReads {
  reads: StakeReads;
  configuration: ConfigurationRead;
}

/**
 * The configuration each S1 stake was scored with. Reads at the stake's block see the end of that
 * block, and the staker's owner may have reconfigured credit points, yields or vault multipliers
 * after the stake in the same block (no event says so), so the figures are taken only where they
 * give the stake's own points (figuresExplain), tried from the cheapest:
 *  1. the end of the block, as read: nearly always;
 *  2. the end of the block before (by hash): reconfigured after the stake;
 *  3. the stake transaction's prestate replayed on that block (stake-prestate.ts): reconfigured
 *     both before and after it, on a node with a prestate tracer.
 * A stake none of them explains keeps the end-of-block figures, which buildCitizenStake marks as
 * inferred. Figures that fit are taken as read: two configurations that give the same points
 * cannot be told apart by points alone, and only the trace could, where it is asked at all.
 * `headers` are the headers the caller already holds (the parent hashes of their blocks).
 */
export async function explainConfigurations(
  deps: { client: PublicClient; contracts: StakerContracts },
  blockReads: BlockReads,
  stakes: readonly StakeAsRead[],
  headers: ReadonlyMap<bigint, Block>,
): Promise<ExplainedReads[]> {
  const explained: ExplainedReads[] = stakes.map((stake) => ({
    reads: stake.reads,
    configuration: "block",
  }));
  const open = stakes
    .map((_, i) => i)
    .filter((i) => stakes[i]!.event.citizenSeason === 1 && !explains(stakes[i]!, stakes[i]!.reads));
  if (open.length === 0) return explained;

  const parents = await parentBlocks(
    deps.client,
    open.map((i) => stakes[i]!.event),
    headers,
  );
  const atParent = (i: number): ConfigurationAtBlock => {
    const { event, citizen, reads } = stakes[i]!;
    return {
      citizenId: event.citizenId!,
      componentVaultId: citizen.componentVaultId ?? 0n,
      vaultId: effectiveVault(citizen, reads).vaultId,
      ...parents.get(event.blockNumber)!,
    };
  };
  /** Takes the figures that explain the stake's points; says whether they did. */
  const settle = (i: number, found: StakeConfiguration | undefined, from: ConfigurationRead) => {
    if (found === undefined) return false;
    const reads = { ...stakes[i]!.reads, ...found };
    if (!explains(stakes[i]!, reads)) return false;
    explained[i] = { reads, configuration: from };
    return true;
  };

  const before = await tryReadConfigurations(blockReads, deps.contracts, open.map(atParent));
  const unsettled = open.filter((i, k) => !settle(i, before[k], "parent"));

  const byTransaction = Map.groupBy(unsettled, (i) => stakes[i]!.event.transactionHash as Hash);
  await Promise.all(
    [...byTransaction].map(async ([transactionHash, indices]) => {
      let prestate: Awaited<ReturnType<typeof readPrestate>>;
      try {
        prestate = await readPrestate(deps.client, transactionHash);
      } catch (error) {
        if (error instanceof PrestateUnavailable) return;
        throw error;
      }
      const replayed = createBlockReads(deps.client, { stateOverride: prestate });
      const found = await tryReadConfigurations(replayed, deps.contracts, indices.map(atParent));
      for (const [k, i] of indices.entries()) settle(i, found[k], "trace");
    }),
  );
  return explained;
}

function explains(stake: StakeAsRead, reads: StakeReads): boolean {
  return figuresExplain({
    citizen: stake.citizen,
    reads,
    timelockMultiplier: splitOption(stake.event.timelockOption ?? 0n).low,
    basePoints: reads.points - stake.laterBonus,
  });
}

/**
 * The block before each stake's block, named by the parent hash of the very block its log came
 * from: the header when the caller holds it, else read by the log's block hash.
 */
async function parentBlocks(
  client: PublicClient,
  events: readonly StakerEventRow[],
  headers: ReadonlyMap<bigint, Block>,
): Promise<Map<bigint, { blockNumber: bigint; blockHash: Hex }>> {
  const parents = new Map<bigint, { blockNumber: bigint; blockHash: Hex }>();
  await Promise.all(
    [...new Map(events.map((event) => [event.blockNumber, event.blockHash as Hash]))].map(
      async ([blockNumber, blockHash]) => {
        const known = headers.get(blockNumber);
        const header =
          known?.hash?.toLowerCase() === blockHash ? known : await client.getBlock({ blockHash });
        parents.set(blockNumber, { blockNumber: blockNumber - 1n, blockHash: header.parentHash });
      },
    ),
  );
  return parents;
}
