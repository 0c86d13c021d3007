/** The API process on its own: `bun api/main.ts [--migrate]` (see server.ts). */
import { runApi } from "./server.ts";

await runApi({ migrate: process.argv.includes("--migrate") });
