import { describe, expect, test } from "bun:test";
import { expectReport, runSmoke } from "./smoke.ts";

describe("benchmarks in smoke size", () => {
  test("the mainnet-shaped bench indexes the sparse chain through the provider within its budget, beside the dense one", async () => {
    // One bloom fill beside the empty one, not three: the follower still settles the blocks
    // whose bloom admits the staker (3 of the 100 at 0.44), and each fill costs a follow run.
    const report = await runSmoke("mainnet", ["--follow-fills", "0.44"]);
    expectReport(report, ["dense_over_limit", "sparse_over_limit"]);
    type Side = {
      backfill: {
        events: number;
        blocks: number;
        rpc: {
          calls: number;
          callsOverBudget: number;
          stateReadsBy: { hash: number; number: number; tag: number };
        };
      };
      limit: { events: number };
    };
    const { dense, sparse } = report.raw as { dense: Side; sparse: Side };
    // The same events, indexed from a chain thousands of times longer, with no 429.
    expect(sparse.backfill.events).toBe(dense.backfill.events);
    expect(sparse.limit.events).toBe(dense.limit.events);
    expect(sparse.backfill.events).toBe(dense.limit.events);
    expect(sparse.backfill.blocks).toBeGreaterThan(1_000 * dense.backfill.blocks);
    expect(sparse.backfill.rpc.callsOverBudget).toBe(0);
    expect(dense.backfill.rpc.callsOverBudget).toBe(0);
    expect(sparse.backfill.rpc.calls).toBeGreaterThan(0);
    // Every read names its block by hash on the sparse chain too, as on a mainnet node: one
    // that answered a hash it never gave out would have the indexer read by number.
    expect(sparse.backfill.rpc.stateReadsBy.hash).toBeGreaterThan(0);
    expect(sparse.backfill.rpc.stateReadsBy.number).toBe(0);
    // The follower over the mainnet-shaped tail settles each block whose bloom admits the
    // staker by its receipts (a retried read counts twice), and reads none where none admits it.
    const follow = (
      report.raw as { follow: { fill?: number; admitted: number; receiptsRead: number }[] }
    ).follow;
    expect(follow.map((run) => run.fill)).toEqual([undefined, 0.44]);
    expect(follow[0]!).toMatchObject({ admitted: 0, receiptsRead: 0 });
    expect(follow[1]!.admitted).toBeGreaterThan(0);
    expect(follow[1]!.receiptsRead).toBeGreaterThanOrEqual(follow[1]!.admitted);
  }, 600_000);
});
