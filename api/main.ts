/** The API process on its own: `bun api/main.ts [--migrate]` (see server.ts). */
import { exitOnSignal } from "../lib/shutdown.ts";
import { runApi } from "./server.ts";

// Before anything waits: a signal while the API starts ends it with 0 (lib/shutdown.ts).
exitOnSignal();

await runApi({ migrate: process.argv.includes("--migrate") });
