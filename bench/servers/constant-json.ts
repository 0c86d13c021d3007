/**
 * Baseline (a) of the API bench: Bun.serve answering every request with one constant JSON body,
 * a real record of the API's so the bytes on the wire match. What HTTP alone costs here.
 *
 * `bun bench/servers/constant-json.ts <body.json>`; HOST and PORT as for the API.
 */
import { config } from "../../lib/config.ts";

const bodyFile = Bun.argv[2];
if (!bodyFile) throw new Error("usage: constant-json.ts <body.json>");
const body = await Bun.file(bodyFile).text();

const server = Bun.serve({
  hostname: config.api.host,
  port: config.api.port,
  fetch: () => new Response(body, { headers: { "content-type": "application/json" } }),
});

process.on("SIGTERM", () => {
  server.stop();
  process.exit(0);
});
