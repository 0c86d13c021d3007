/**
 * Settling inferred Hand claims: a stake whose Hand flag was inferred (the node had no call
 * trace) is traced again once the node offers traces, and what the stake applied is written.
 * Run by the operator (`read-failures --retry`). Takes its dependencies, so it can be built alone.
 */
import type { Hex, PublicClient } from "viem";
import type { StakerContracts } from "../chain/contracts.ts";
import { settleInferredHandFlag } from "../chain/hand-flag.ts";
import type { IndexerStore } from "../store/index.ts";

export interface HandClaimSettlerDeps {
  client: PublicClient;
  contracts: StakerContracts;
  store: IndexerStore;
}

export function createHandClaimSettler({ client, contracts, store }: HandClaimSettlerDeps) {
  return {
    /**
     * Reads the Hand flag of every stake whose flag was inferred from the node's call trace,
     * once the node offers one, and writes what the stake applied. `still` counts those the
     * node still cannot trace.
     */
    async settleInferred() {
      const inferred = await store.inferredHandClaims();
      let settled = 0;
      for (const stake of inferred) {
        const flag = await settleInferredHandFlag(client, contracts.staker, {
          ...stake,
          transactionHash: stake.transactionHash as Hex,
        });
        if (flag === undefined) break;
        if (await store.settleHandClaim(stake, flag)) settled++;
      }
      return { settled, still: inferred.length - settled };
    },
  };
}
