import postgres from "postgres";

/** The tables the indexer writes, each as a sorted list of JSON rows (timestamps left out). */
const TABLES = ["staker_events", "citizen_stakes", "citizens", "staked_citizens"] as const;

export async function tableSnapshot(databaseUrl: string): Promise<Record<string, string[]>> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const snapshot: Record<string, string[]> = {};
    for (const table of TABLES) {
      const rows = await sql.unsafe(`select row_to_json(t)::text as row from ${table} t`);
      snapshot[table] = rows.map((row) => row.row as string).sort();
    }
    return snapshot;
  } finally {
    await sql.end({ timeout: 5 });
  }
}
