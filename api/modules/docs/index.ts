/**
 * The OpenAPI document at /openapi.json and a docs page at /docs that works without internet:
 * the Swagger UI bundle comes from the pinned swagger-ui-dist package and is served by this app
 * (the openapi plugin would otherwise point the page at a CDN, at "latest"). Its two files are
 * imported `with { type: "file" }`: a path in node_modules from source, an embedded file in the
 * compiled binary. Their declarations (assets.d.ts) are referenced here, so that a program that
 * reaches this module from elsewhere (the client's declaration build) compiles it too.
 */
/// <reference path="./assets.d.ts" />
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { version as UI_VERSION } from "swagger-ui-dist/package.json";
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import { RouteNotFound } from "../../problems.ts";

/**
 * Versioned URLs, so the files can be kept for long: a new package version is a new URL. The
 * route takes the version as a parameter: a path built from a string would give the app's route
 * type (a client's, through Eden) a `string` key that matches any name.
 */
const ASSETS = `/docs/assets/${UI_VERSION}`;
/** A Map, not an object: a name such as `constructor` or `__proto__` must find nothing. */
const FILES = new Map([
  ["swagger-ui-bundle.js", { path: bundlePath, type: "text/javascript; charset=utf-8" }],
  ["swagger-ui.css", { path: cssPath, type: "text/css; charset=utf-8" }],
]);

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
      "/docs/assets/:version/:file",
      ({ params }) => {
        const file = params.version === UI_VERSION ? FILES.get(params.file) : undefined;
        if (!file) throw new RouteNotFound("no such docs asset");
        return new Response(Bun.file(file.path), {
          headers: {
            "content-type": file.type,
            "cache-control": "public, max-age=31536000, immutable",
          },
        });
      },
      { detail: { hide: true } },
    );
}
