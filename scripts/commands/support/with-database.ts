import { createDatabase, type Database } from "../../../db/client.ts";
import { config } from "../../../lib/config.ts";

/** Runs `work` with a one-connection database handle, closed afterwards. */
export async function withDatabase<T>(work: (db: Database) => Promise<T>) {
  const database = createDatabase(config.databaseUrl, { max: 1 });
  try {
    return await work(database.db);
  } finally {
    await database.close();
  }
}
