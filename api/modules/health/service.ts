import type { Database } from "../../../db/client.ts";
import { indexedBlockSource } from "../../indexed-block.ts";

export function createHealthService(db: Database) {
  const checkpoint = indexedBlockSource(db);
  const indexedBlock = db
    .with(checkpoint)
    .select({ indexedBlock: checkpoint.indexedBlock })
    .from(checkpoint)
    .prepare("indexed_block");

  return {
    /** The checkpoint's block; throws when Postgres cannot be reached. */
    async indexedBlock(): Promise<bigint | null> {
      const [row] = await indexedBlock.execute();
      return row?.indexedBlock ?? null;
    },
  };
}

export type HealthService = ReturnType<typeof createHealthService>;
