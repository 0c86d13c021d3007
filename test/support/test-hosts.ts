/**
 * Test hosts on one LAN: a network namespace per host, each with a veth cable into a bridge in
 * the root namespace, which holds the services' address. A host's cable can be unplugged (its
 * bridge end set down: packets both ways are dropped, no connection is told) and plugged back.
 * Needs root and iproute2. Names carry the test process's pid, so a run that was killed before
 * it cleaned up is swept by the next one.
 */
import { randomInt } from "node:crypto";
import { runProcess } from "./commands.ts";

/** Namespaces are `csnet-<pid>-h<n>`, bridges `csbr<pid>`, cables' bridge ends `csv<pid>h<n>`. */
const NAMESPACE = /^csnet-(\d+)-h\d+$/;
const BRIDGE = /^csbr(\d+)$/;

async function run(argv: string[]): Promise<string> {
  const result = await runProcess(argv, { cwd: "/", env: process.env });
  if (result.code !== 0) {
    throw new Error(`${argv.join(" ")} exited ${result.code}: ${result.stderr.trim()}`);
  }
  return result.stdout;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Removes namespaces and bridges left by runs whose process is gone. */
async function sweepStale() {
  const namespaces = (await run(["ip", "netns", "list"]))
    .split("\n")
    .map((line) => line.split(" ")[0]!);
  for (const name of namespaces) {
    const owner = NAMESPACE.exec(name)?.[1];
    if (owner && !alive(Number(owner))) await run(["ip", "netns", "delete", name]).catch(() => {});
  }
  const links = JSON.parse(await run(["ip", "-j", "link", "show", "type", "bridge"])) as Array<{
    ifname: string;
  }>;
  for (const { ifname } of links) {
    const owner = BRIDGE.exec(ifname)?.[1];
    if (owner && !alive(Number(owner))) await run(["ip", "link", "delete", ifname]).catch(() => {});
  }
}

/** A /24 in 10.0.0.0/8 that no route of this machine touches. */
async function freeSubnet(): Promise<string> {
  const routes = JSON.parse(
    await run(["ip", "-j", "-4", "route", "show", "table", "all"]),
  ) as Array<{
    dst: string;
  }>;
  for (;;) {
    const subnet = `10.${randomInt(64, 250)}.${randomInt(0, 256)}`;
    if (!routes.some((route) => route.dst.startsWith(`${subnet}.`))) return subnet;
  }
}

export interface TestHost {
  name: string;
  namespace: string;
  address: string;
  /** The argv prefix that runs a command on this host, under its own hostname. */
  exec(argv: string[]): string[];
  /** Unplugs the host's cable: nothing reaches it or leaves it, and no peer is told. */
  cut(): Promise<void>;
  /** Plugs it back. */
  restore(): Promise<void>;
}

export async function startTestHosts(count: number) {
  await sweepStale();
  const pid = process.pid;
  const bridge = `csbr${pid}`;
  const subnet = await freeSubnet();
  const serviceAddress = `${subnet}.1`;
  const hosts: TestHost[] = [];
  const remove = async () => {
    for (const host of hosts) await run(["ip", "netns", "delete", host.namespace]).catch(() => {});
    await run(["ip", "link", "delete", bridge]).catch(() => {});
  };
  try {
    await run(["ip", "link", "add", bridge, "type", "bridge"]);
    await run(["ip", "address", "add", `${serviceAddress}/24`, "dev", bridge]);
    await run(["ip", "link", "set", bridge, "up"]);
    for (let n = 1; n <= count; n++) {
      const namespace = `csnet-${pid}-h${n}`;
      const cable = `csv${pid}h${n}`;
      const address = `${subnet}.${10 + n}`;
      const name = `cs-host${n}`;
      await run(["ip", "netns", "add", namespace]);
      const inside = (argv: string[]) => run(["ip", "netns", "exec", namespace, ...argv]);
      await run([
        "ip",
        "link",
        "add",
        cable,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        namespace,
      ]);
      await run(["ip", "link", "set", cable, "master", bridge, "up"]);
      await inside(["ip", "link", "set", "lo", "up"]);
      await inside(["ip", "address", "add", `${address}/24`, "dev", "eth0"]);
      await inside(["ip", "link", "set", "eth0", "up"]);
      hosts.push({
        name,
        namespace,
        address,
        exec: (argv) => [
          "ip",
          "netns",
          "exec",
          namespace,
          // Its own hostname, as on a host of its own: the process names itself by it.
          "unshare",
          "--uts",
          "sh",
          "-c",
          `hostname ${name} && exec "$@"`,
          "sh",
          ...argv,
        ],
        cut: async () => void (await run(["ip", "link", "set", cable, "down"])),
        restore: async () => void (await run(["ip", "link", "set", cable, "up"])),
      });
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return { serviceAddress, hosts, remove };
}

export type TestHosts = Awaited<ReturnType<typeof startTestHosts>>;
