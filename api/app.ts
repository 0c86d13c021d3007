/**
 * The read API as an Elysia app built from its dependencies alone (a database handle, Redis and
 * settings), so tests and other suites can build it on scratch resources; api/main.ts adds the
 * process around it.
 */
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import type Redis from "ioredis";
import type { Logger } from "pino";
import type { Database } from "../db/client.ts";
import { logger } from "../lib/log.ts";
import { createRateLimiter } from "./modules/auth/rate-limit.ts";
import { createAuthService } from "./modules/auth/service.ts";
import { citizensModule } from "./modules/citizens/index.ts";
import { createCitizensService } from "./modules/citizens/service.ts";
import { healthModule } from "./modules/health/index.ts";
import { createHealthService } from "./modules/health/service.ts";
import { metricsModule } from "./modules/metrics/index.ts";
import {
  ALLOWED_METHODS,
  BadParameter,
  DatabaseUnavailable,
  InternalError,
  isDatabaseUnreachable,
  MethodNotAllowed,
  Problem,
  problemResponse,
  RouteNotFound,
} from "./problems.ts";

export interface ApiSettings {
  rateLimitPerMinute: number;
  readyMaxLagBlocks: number;
  /** Redis keys (the rate limiter's) go under this prefix. */
  keyPrefix: string;
  imageTemplateS1?: string;
  imageTemplateS2?: string;
}

export interface AppDependencies {
  db: Database;
  redis: Redis;
  settings: ApiSettings;
  /** The chain head for /readyz; without it readiness does not judge lag. */
  chainHead?: () => Promise<bigint>;
  log?: Logger;
}

/** The name of the parameter a validation error is about ("address" from "/address"). */
function parameterOf(path: string | undefined, fallback: string): string {
  const name = path?.split("/").filter(Boolean)[0];
  return name ?? fallback;
}

export function createApp({
  db,
  redis,
  settings,
  chainHead,
  log = logger("api"),
}: AppDependencies) {
  const started = new WeakMap<Request, number>();

  return new Elysia()
    .use(
      openapi({
        path: "/docs",
        specPath: "/openapi.json",
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
    .use(metricsModule({ db }))
    .onRequest(({ request }) => {
      started.set(request, performance.now());
    })
    .onError(({ code, error, request, set }) => {
      const problem = toProblem(code, error, request.method);
      if (problem === "options") {
        return new Response(null, { status: 204, headers: { allow: ALLOWED_METHODS } });
      }
      if (problem instanceof InternalError) {
        log.error({ err: error, method: request.method, code }, "request failed");
      }
      set.status = problem.status;
      // set.headers holds X-Indexed-Block when the request got as far as a query.
      return problemResponse(problem, set.headers as Record<string, string>);
    })
    .onAfterResponse(({ request, path, set, responseValue }) => {
      const status = responseValue instanceof Response ? responseValue.status : set.status;
      const begun = started.get(request);
      log.info(
        {
          method: request.method,
          path,
          status,
          ms: begun === undefined ? undefined : Math.round((performance.now() - begun) * 10) / 10,
        },
        "request",
      );
    })
    .use(
      healthModule({
        health: createHealthService(db),
        maxLagBlocks: settings.readyMaxLagBlocks,
        chainHead,
      }),
    )
    .use(
      citizensModule({
        auth: createAuthService(db),
        limiter: createRateLimiter({
          redis,
          keyPrefix: settings.keyPrefix,
          perMinute: settings.rateLimitPerMinute,
          log,
        }),
        rateLimitPerMinute: settings.rateLimitPerMinute,
        citizens: createCitizensService(db),
        images: { s1: settings.imageTemplateS1, s2: settings.imageTemplateS2 },
      }),
    );
}

/** Every failure becomes a named problem; only a bug or an unexpected fault is a 500. */
function toProblem(code: string | number, error: unknown, method: string): Problem | "options" {
  if (error instanceof Problem) return error;
  switch (code) {
    case "NOT_FOUND":
      if (method === "OPTIONS") return "options";
      if (method !== "GET" && method !== "HEAD") return new MethodNotAllowed(method);
      return new RouteNotFound("no such path; see /openapi.json");
    case "VALIDATION": {
      const validation = error as {
        type?: string;
        valueError?: { path?: string; schema?: { description?: string } };
      };
      // A response that fails its own schema is our bug, not the client's.
      if (validation.type === "response") return new InternalError();
      const parameter = parameterOf(validation.valueError?.path, validation.type ?? "request");
      const description = validation.valueError?.schema?.description;
      return new BadParameter(
        parameter,
        description ? `${parameter}: ${description}` : `${parameter} is not valid`,
      );
    }
    case "PARSE":
      return new BadParameter("body", "the request body could not be parsed");
    case "INVALID_COOKIE_SIGNATURE":
      return new BadParameter("cookie", "a signed cookie did not verify");
  }
  if (isDatabaseUnreachable(error)) return new DatabaseUnavailable();
  return new InternalError();
}

export type App = ReturnType<typeof createApp>;
