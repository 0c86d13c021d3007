/** The API process on its own: `bun api/main.ts [--migrate]` (see server.ts). */
import { surviveDroppedConnections } from "../lib/dropped-connections.ts";
import { exitOnSignal } from "../lib/shutdown.ts";
import { runApi } from "./server.ts";

// Before anything waits: a signal while the API starts ends it with 0 (lib/shutdown.ts), and a
// connection dropped where nothing awaits it does not end it.
exitOnSignal();
surviveDroppedConnections();

await runApi({ migrate: process.argv.includes("--migrate") });
