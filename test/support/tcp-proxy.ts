/**
 * A TCP proxy that can cut every connection and refuse new ones for a while: what a Postgres or
 * Redis restart looks like to its clients, without restarting the shared server.
 */
import { connect, createServer, type Socket } from "node:net";

/** Listens on `listen` (127.0.0.1 unless given: a test host's side of a bridge, say). */
export async function startTcpProxy(
  upstream: { host: string; port: number },
  listen = "127.0.0.1",
) {
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const server = connect(upstream.port, upstream.host);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        sockets.delete(socket);
        client.destroy();
        server.destroy();
      });
    }
    client.pipe(server).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, listen, resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  return {
    port,
    /** The same URL with host and port swapped for the proxy's. */
    route(url: string) {
      const routed = new URL(url);
      routed.hostname = listen;
      routed.port = String(port);
      return routed.toString();
    },
    /** Drops every open connection and refuses new ones until `restore`. */
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
