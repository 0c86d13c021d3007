/**
 * A range's staker logs once its missing-log check has passed them: by the blooms and receipts
 * of a dense range (missing-logs.ts), by a second node (check-node.ts) or by the staker's token
 * transfers (transfer-check.ts) for a chunk. See fetchRange.
 */
import type { Block, Hex } from "viem";
import type { StakerLogsUnsettled } from "../chain/block-receipts.ts";
import { agreeWithCheckNode, CheckNodeOutOfStep } from "../chain/check-node.ts";
import type { RpcLog, StakerLog } from "../chain/logs.ts";
import { checkNoStakerLogMissing } from "../chain/missing-logs.ts";
import { checkStakerTransfersLogged } from "../chain/transfer-check.ts";
import { ReorgDetected } from "./block-headers.ts";
import type { FetchDeps } from "./fetch-range.ts";

/** What a range's missing-log check did, in blocks. */
export interface LogCheck {
  /**
   * Blocks asked again by hash that held no more staker logs than the answer: bloom false
   * positives (dense) or plain token transfers to or from the staker (the Transfer check).
   */
  askedAgain: number;
  /** Blocks whose receipts were read and matched their header's receiptsRoot. */
  receiptsChecked: number;
  /** Blocks whose staker logs the answer had wrong, written as the check settled them. */
  corrected: number;
  /** Blocks the check node (RPC_CHECK_URL) gave otherwise than the answer (chunks). */
  disputed: number;
}

const NO_CHECK: LogCheck = { askedAgain: 0, receiptsChecked: 0, corrected: 0, disputed: 0 };

/** The range's staker logs once its missing-log check has passed them (see fetchRange). */
export async function checkedLogs(
  deps: FetchDeps,
  headers: Map<bigint, Block>,
  answer: StakerLog[],
  fetched: {
    from: bigint;
    dense?: boolean;
    transfers: RpcLog[];
    checkAnswer?: { logs: StakerLog[]; lastHash: Hex };
    last: Block;
  },
): Promise<{ logs: StakerLog[]; logCheck: LogCheck; held?: StakerLogsUnsettled }> {
  const { client, contracts } = deps;
  if (fetched.dense) {
    const { logs, check, unsettled } = await checkNoStakerLogMissing(
      deps,
      contracts.staker,
      headers.values(),
      answer,
    );
    const logCheck = { ...NO_CHECK, ...check, corrected: check.fromReceipts };
    if (!unsettled) return { logs, logCheck };
    // A block that left the chain has no receipts either: that is a reorg, not a lying node.
    const now = await client.getBlock({ blockNumber: unsettled.blockNumber });
    if (now.hash !== headers.get(unsettled.blockNumber)?.hash) {
      throw new ReorgDetected(`block ${unsettled.blockNumber} changed during the fetch`);
    }
    // Nothing before it to write: the range is the held block's.
    if (unsettled.blockNumber === fetched.from) throw unsettled;
    return { logs, logCheck, held: unsettled };
  }
  const { checkAnswer, last } = fetched;
  if (deps.checkNode && checkAnswer) {
    if (checkAnswer.lastHash !== last.hash) {
      throw new CheckNodeOutOfStep(
        `the check node (RPC_CHECK_URL) has ${checkAnswer.lastHash} as block ${last.number}, the node at RPC_URL ${last.hash}; the chunk is fetched again`,
      );
    }
    const { logs, comparison } = await agreeWithCheckNode(deps, deps.checkNode, contracts.staker, {
      own: answer,
      check: checkAnswer.logs,
    });
    return {
      logs,
      logCheck: {
        ...NO_CHECK,
        receiptsChecked: comparison.settledByReceipts,
        corrected: comparison.corrected,
        disputed: comparison.disputed,
      },
    };
  }
  const { logs, ...check } = await checkStakerTransfersLogged(
    deps,
    contracts,
    fetched.transfers,
    answer,
  );
  return { logs, logCheck: { ...NO_CHECK, ...check } };
}
