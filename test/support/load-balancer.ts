/**
 * A real load balancer in front of API instances: Debian's haproxy, with a configuration written
 * here, round robin, health checks on /readyz, and each answer naming its backend in
 * `x-served-by` (haproxy's own header, so the instances need no knowledge of it).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../devnet/anvil.ts";
import { startProcess } from "./commands.ts";
import { LOADED_MACHINE_MS } from "./time.ts";

export const HAPROXY = "/usr/sbin/haproxy";
/** The response header naming the backend that answered. */
export const SERVED_BY = "x-served-by";
/** Health checks: a backend is down after FALL failed checks INTERVAL_MS apart. */
const INTERVAL_MS = 500;
const FALL = 2;

export interface Backend {
  name: string;
  port: number;
}

/**
 * What an operator would write: a refused connection is tried again on another backend at once
 * (`option redispatch 1`), so a killed instance costs its open streams, not new requests; long
 * timeouts, because a live stream is quiet between keep-alives.
 */
function configuration(port: number, backends: Backend[]): string {
  return `global
  maxconn 2000

defaults
  mode http
  timeout connect 2s
  timeout client 1h
  timeout server 1h
  retries 3
  option redispatch 1

frontend api
  bind 127.0.0.1:${port}
  default_backend instances

backend instances
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter ${INTERVAL_MS} fall ${FALL} rise 2
  http-response set-header ${SERVED_BY} %s
${backends.map((backend) => `  server ${backend.name} 127.0.0.1:${backend.port} check`).join("\n")}
`;
}

/** Starts haproxy in front of `backends` and waits until each of them has answered through it. */
export async function startLoadBalancer(backends: Backend[]) {
  const dir = await mkdtemp(join(tmpdir(), "cs-haproxy-"));
  const port = await freePort();
  const file = join(dir, "haproxy.cfg");
  await writeFile(file, configuration(port, backends));
  // -db: in the foreground, so the test owns the process; -W is not needed for one process.
  const haproxy = startProcess([HAPROXY, "-db", "-f", file], { cwd: dir, env: {} });
  const url = `http://127.0.0.1:${port}`;
  const seen = new Set<string>();
  const deadline = Date.now() + LOADED_MACHINE_MS;
  while (seen.size < backends.length) {
    if (haproxy.child.exitCode !== null || Date.now() > deadline) {
      await haproxy.stop();
      throw new Error(
        `haproxy did not reach every backend (seen ${[...seen]}):\n${haproxy.lines.join("\n")}`,
      );
    }
    try {
      const response = await fetch(`${url}/healthz`);
      const name = response.headers.get(SERVED_BY);
      if (response.status === 200 && name) seen.add(name);
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(50);
  }
  return {
    url,
    port,
    lines: haproxy.lines,
    async stop() {
      await haproxy.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export type LoadBalancer = Awaited<ReturnType<typeof startLoadBalancer>>;
