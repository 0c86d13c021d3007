/**
 * The stream's request and event shapes, declared once: they validate the request and make the
 * OpenAPI document. Every event's `data` is one JSON object holding the block it reflects.
 */
import { t } from "elysia";
import { CitizenQuery, CitizenRecord } from "../citizens/model.ts";

/** The address alone: a stream follows the head, so `block` is refused (resume with Last-Event-ID). */
export const StreamQuery = t.Object({ address: CitizenQuery.properties.address });

export const StreamHeaders = t.Object({
  "last-event-id": t.Optional(
    t.String({
      pattern: "^[0-9]{1,20}(-0x[0-9a-f]{64})?$",
      description:
        "the id of the last `synced` event received (<block>-<block hash>), or a bare block number read as that block of the current chain",
    }),
  ),
});

const block = t.Integer({ minimum: 0, description: "the indexed block this event reflects" });

export const CitizenEvent = t.Object(
  { block, citizen: CitizenRecord },
  { description: "`event: citizen`: a citizen staked, or its record changed; the full new record" },
);

export const RemovedEvent = t.Object(
  {
    block,
    type: t.Union([t.Literal("s1"), t.Literal("s2")]),
    id: t.String({ pattern: "^[0-9]+$", description: "citizen id (decimal)" }),
  },
  { description: "`event: removed`: the citizen is no longer staked by this address" },
);

export const SyncedEvent = t.Object(
  { block },
  {
    description:
      "`event: synced`, `id: <block>`: every change through this block has been sent; the events before it since the last `synced` make the address's citizens equal its rows at this block",
  },
);

export const ResetEvent = t.Object(
  { block },
  {
    description:
      "`event: reset`: forget every citizen held for this address; the full current set follows (sent when Last-Event-ID names a block the chain no longer reaches after a reorg)",
  },
);

export const StreamEvent = t.Union([CitizenEvent, RemovedEvent, SyncedEvent, ResetEvent]);
