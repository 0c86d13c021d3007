/**
 * Listening on a port that is taken must fail. Elysia asks Bun.serve for SO_REUSEPORT by
 * default; with it a second instance on the same port starts "listening" and the kernel splits
 * connections between the two. Every server we start listens with EXCLUSIVE_PORT and turns the
 * bind error into PortInUse.
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
