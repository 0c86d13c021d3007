/**
 * The OpenAPI document at /openapi.json and a docs page at /docs that works without internet:
 * the Swagger UI bundle comes from the pinned swagger-ui-dist package and is served by this app
 * (the openapi plugin would otherwise point the page at a CDN, at "latest").
 */
import { dirname, join } from "node:path";
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { RouteNotFound } from "../../problems.ts";

const DIST = dirname(Bun.fileURLToPath(import.meta.resolve("swagger-ui-dist/package.json")));
const { version: UI_VERSION } = (await Bun.file(join(DIST, "package.json")).json()) as {
  version: string;
};
/** Versioned URLs, so the files can be kept for long: a new package version is a new URL. */
const ASSETS = `/docs/assets/${UI_VERSION}`;
const FILES: Record<string, string> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
};

export function docsModule() {
  return new Elysia()
    .use(
      openapi({
        path: "/docs",
        specPath: "/openapi.json",
        provider: "swagger-ui",
        swagger: {
          cdn: `${ASSETS}/swagger-ui-bundle.js`,
          theme: `${ASSETS}/swagger-ui.css`,
          autoDarkMode: false,
        },
        documentation: {
          info: {
            title: "citizen-staking read API",
            version: "1",
            description:
              "Neo Tokyo citizens staked in the NeoTokyoStaker, as of the indexed block.",
          },
          components: {
            securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
          },
        },
      }),
    )
    .get(
      `${ASSETS}/:file`,
      ({ params, set }) => {
        const type = FILES[params.file];
        if (!type) throw new RouteNotFound("no such docs asset");
        set.headers["content-type"] = type;
        set.headers["cache-control"] = "public, max-age=31536000, immutable";
        return Bun.file(join(DIST, params.file));
      },
      { detail: { hide: true } },
    );
}
