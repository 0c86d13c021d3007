/**
 * Probes, without auth. /healthz: the process answers. /readyz: Postgres answers, a checkpoint
 * exists, and (when a chain head is known, from RPC_URL) the indexer is at most maxLagBlocks
 * behind it. With no RPC the lag is not judged: readiness then means "serving indexed data".
 */
import { Elysia } from "elysia";
import { setIndexedBlock } from "../../indexed-block.ts";
import { Liveness, Readiness } from "./model.ts";
import type { HealthService } from "./service.ts";

export interface HealthDependencies {
  health: HealthService;
  maxLagBlocks: number;
  /** The chain head, when the API is given an RPC; undefined or a failure leaves lag unknown. */
  chainHead?: () => Promise<bigint>;
}

export function healthModule({ health, maxLagBlocks, chainHead }: HealthDependencies) {
  return new Elysia({ tags: ["operations"] })
    .get("/healthz", () => ({ status: "ok" as const }), {
      response: Liveness,
      detail: { summary: "The process is up", tags: ["operations"] },
    })
    .get(
      "/readyz",
      async ({ set, status }) => {
        const [indexed, head] = await Promise.all([
          health.indexedBlock().then(
            (block) => ({ reachable: true, block }),
            () => ({ reachable: false, block: null }),
          ),
          chainHead ? chainHead().catch(() => null) : Promise.resolve(null),
        ]);
        setIndexedBlock(set, indexed.block);
        const lag = head !== null && indexed.block !== null ? Number(head - indexed.block) : null;
        const body: Readiness = {
          ready:
            indexed.reachable && indexed.block !== null && (lag === null || lag <= maxLagBlocks),
          database: indexed.reachable ? "ok" : "unreachable",
          indexedBlock: indexed.block?.toString() ?? null,
          headBlock: head?.toString() ?? null,
          lagBlocks: lag,
          maxLagBlocks,
        };
        return body.ready ? body : status(503, body);
      },
      {
        response: { 200: Readiness, 503: Readiness },
        detail: {
          summary: "Ready to serve: database up and the indexer close to the head",
          tags: ["operations"],
        },
      },
    );
}
