import { type Static, t } from "elysia";

export const Liveness = t.Object({ status: t.Literal("ok") });

export const Readiness = t.Object({
  ready: t.Boolean(),
  reasons: t.Array(t.String(), {
    description: "why the API is not ready, one line each; empty when it is",
  }),
  database: t.Union([t.Literal("ok"), t.Literal("unreachable")]),
  rpc: t.Union([t.Literal("ok"), t.Literal("unreachable"), t.Literal("not configured")], {
    description: "the node at RPC_URL, asked for the head",
  }),
  indexedBlock: t.Union([t.String(), t.Null()], {
    description: "null before the first checkpoint",
  }),
  headBlock: t.Union([t.String(), t.Null()], {
    description: "the chain head from RPC_URL; null when no RPC is configured or it did not answer",
  }),
  follower: t.Union([t.Literal("ok"), t.Literal("failing"), t.Literal("no report")], {
    description:
      "the indexer's head follower, as it last reported itself (failing: its error is in reasons)",
  }),
  lagBlocks: t.Union([t.Number(), t.Null()]),
  primary: t.Union([t.Literal("ok"), t.Literal("unreachable"), t.Literal("not configured")], {
    description:
      "the primary (DATABASE_URL) when the API reads a replica (DATABASE_READ_URL); not configured when it reads the primary itself",
  }),
  replicaLagBlocks: t.Union([t.Number(), t.Null()], {
    description:
      "blocks the replica's indexed block is behind the primary's; null without a replica, or when either does not answer",
  }),
  maxLagBlocks: t.Number(),
});

export type Readiness = Static<typeof Readiness>;
