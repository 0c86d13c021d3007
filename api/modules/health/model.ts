import { type Static, t } from "elysia";

export const Liveness = t.Object({ status: t.Literal("ok") });

export const Readiness = t.Object({
  ready: t.Boolean(),
  database: t.Union([t.Literal("ok"), t.Literal("unreachable")]),
  indexedBlock: t.Union([t.String(), t.Null()], {
    description: "null before the first checkpoint",
  }),
  headBlock: t.Union([t.String(), t.Null()], {
    description: "the chain head from RPC_URL; null when no RPC is configured or it did not answer",
  }),
  lagBlocks: t.Union([t.Number(), t.Null()]),
  maxLagBlocks: t.Number(),
});

export type Readiness = Static<typeof Readiness>;
