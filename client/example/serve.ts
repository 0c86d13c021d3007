/**
 * Serves the example dashboard (index.html and its script, bundled for the browser with
 * Bun.build) on its own port, so the page runs on another origin than the API, as a real
 * dashboard does: the API must list this origin in CORS_ORIGINS.
 */
import { join } from "node:path";

export interface DashboardConfig {
  /** The API's origin, as the browser reaches it. */
  apiUrl: string;
  token: string;
  address: string;
}

export async function bundleDashboard(): Promise<string> {
  const build = await Bun.build({
    entrypoints: [join(import.meta.dir, "dashboard.ts")],
    target: "browser",
    minify: true,
  });
  const [output] = build.outputs;
  if (!build.success || output === undefined) {
    throw new AggregateError(build.logs, "the dashboard script did not build");
  }
  return output.text();
}

export async function startDashboardServer(options: { hostname?: string; port?: number } = {}) {
  const hostname = options.hostname ?? "127.0.0.1";
  const [page, script] = await Promise.all([
    Bun.file(join(import.meta.dir, "index.html")).text(),
    bundleDashboard(),
  ]);
  const server = Bun.serve({
    hostname,
    port: options.port ?? 0,
    fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/" || pathname === "/index.html") {
        return new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } });
      }
      if (pathname === "/dashboard.js") {
        return new Response(script, {
          headers: { "content-type": "text/javascript; charset=utf-8" },
        });
      }
      return new Response("not found", { status: 404 });
    },
  });
  const origin = `http://${hostname}:${server.port}`;
  return {
    /** The page's origin: what the API's CORS_ORIGINS must hold. */
    origin,
    /** The page for one wallet; the settings ride in the fragment, never sent to this server. */
    pageUrl: ({ apiUrl, token, address }: DashboardConfig) => {
      const fragment = new URLSearchParams({ api: apiUrl, token, address }).toString();
      // ":" and "/" are plain fragment characters: the printed URL stays readable.
      return `${origin}/#${fragment.replaceAll("%3A", ":").replaceAll("%2F", "/")}`;
    },
    stop: () => server.stop(true),
  };
}
