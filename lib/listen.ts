/**
 * Listening on a port that is taken must fail. Elysia asks Bun.serve for SO_REUSEPORT by
 * default; with it a second instance on the same port starts "listening" and the kernel splits
 * connections between the two. Every server we start listens with EXCLUSIVE_PORT and turns the
 * bind error into PortInUse, except the API's own processes sharing a port (API_PROCESSES), whose
 * first one checks the port with `claimPort` before they bind it together.
 */
import { Refused } from "./fail.ts";

export const EXCLUSIVE_PORT = { reusePort: false } as const;

export class PortInUse extends Refused {
  override name = "PortInUse";
}

/**
 * PortInUse naming the setting (PORT, --port) when `error` is a busy address, else `error`.
 * Bun reports it as an Error with code EADDRINUSE.
 */
export function explainListenError(
  error: unknown,
  where: { hostname: string; port: number; setting: string },
): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "EADDRINUSE") return error;
  return new PortInUse(
    `${where.setting} ${where.port}: ${where.hostname}:${where.port} is already in use; stop what holds it or pick another port`,
  );
}

/**
 * Binds `port` exclusively and lets it go at once: PortInUse (naming `setting`) when anything
 * holds it, even a group of SO_REUSEPORT sockets, else the port (the one the kernel picked for
 * 0). Between this and the group's own bind another process could take it: a start-up check.
 */
export function claimPort(where: { hostname: string; port: number; setting: string }): number {
  try {
    const probe = Bun.serve({
      hostname: where.hostname,
      port: where.port,
      ...EXCLUSIVE_PORT,
      fetch: () => new Response(null, { status: 503 }),
    });
    const port = probe.port ?? where.port;
    void probe.stop(true);
    return port;
  } catch (error) {
    throw explainListenError(error, where);
  }
}
