/**
 * Probes, without auth. /healthz: the process answers. /readyz: Postgres answers, a checkpoint
 * exists, a read replica (DATABASE_READ_URL) is at most maxLagBlocks behind the primary, and,
 * when RPC_URL is configured, the node answers and the indexer is at most maxLagBlocks behind its
 * head; the body lists the reasons when not. With no RPC the lag is not judged: readiness then
 * means "serving indexed data".
 */
import { Elysia } from "elysia";
import { setIndexedBlock } from "../../indexed-block.ts";
import { Liveness, Readiness } from "./model.ts";
import type { HealthService } from "./service.ts";

export interface HealthDependencies {
  health: HealthService;
  maxLagBlocks: number;
  /** The chain head, when the API is given an RPC; a failure makes the API not ready. */
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
        const body = await health.readiness({ maxLagBlocks, chainHead });
        setIndexedBlock(set, body.indexedBlock === null ? null : BigInt(body.indexedBlock));
        return body.ready ? body : status(503, body);
      },
      {
        response: { 200: Readiness, 503: Readiness },
        detail: {
          summary: "Ready to serve: database up, node answering, the indexer close to the head",
          tags: ["operations"],
        },
      },
    );
}
