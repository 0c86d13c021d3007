/**
 * /docs in a real browser: headless Chromium loads the page over HTTP from the app alone (no
 * network beyond it), runs the Swagger UI bundle the app serves from its pinned package, and the
 * rendered DOM names the three endpoints. Needs Debian's `chromium` (scripts/bootstrap.sh installs
 * it for CI).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApiHarness } from "./support.ts";

const CHROMIUM = Bun.which("chromium") ?? Bun.which("chromium-browser");

let api: Awaited<ReturnType<typeof createApiHarness>>;
let server: ReturnType<typeof api.app.listen>;
let base: string;

beforeAll(async () => {
  api = await createApiHarness();
  server = api.app.listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${server.server!.port}`;
});

afterAll(async () => {
  await server.stop();
  await api.close();
});

/** The DOM after the page's scripts ran: `chromium --headless --dump-dom`. */
async function renderedDom(url: string): Promise<string> {
  if (!CHROMIUM) throw new Error("chromium is not installed; run scripts/bootstrap.sh");
  const profile = await Bun.$`mktemp -d`.text();
  const browser = Bun.spawn(
    [
      CHROMIUM,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-dev-shm-usage",
      "--no-first-run",
      `--user-data-dir=${profile.trim()}`,
      // Lets the page's timers and fetches run before the DOM is printed.
      "--virtual-time-budget=15000",
      "--dump-dom",
      url,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const timeout = setTimeout(() => browser.kill(), 45_000);
  try {
    const [dom, errors, code] = await Promise.all([
      new Response(browser.stdout).text(),
      new Response(browser.stderr).text(),
      browser.exited,
    ]);
    if (code !== 0) throw new Error(`chromium exited ${code}: ${errors.slice(-2000)}`);
    return dom;
  } finally {
    clearTimeout(timeout);
    await Bun.$`rm -rf ${profile.trim()}`.quiet();
  }
}

describe("the docs page in Chromium", () => {
  test("renders the three endpoints from assets the app serves itself", async () => {
    const page = await (await fetch(`${base}/docs`)).text();
    // Every script and stylesheet is the app's own: nothing from a CDN.
    const sources = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(source).toStartWith("/");

    const dom = await renderedDom(`${base}/docs`);
    expect(dom).toContain("swagger-ui");
    for (const path of [
      "/v1/staking/citizens/s1/{id}",
      "/v1/staking/citizens/s2/{id}",
      "/v1/staking/citizens",
    ]) {
      expect(dom).toContain(`data-path="${path}"`);
    }
  }, 60_000);
});
