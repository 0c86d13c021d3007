/**
 * bull-board over the indexer's queues, behind HTTP Basic auth: operators watch chunk and follow
 * jobs in a browser. Read-only unless retries are allowed; even then nothing else changes the
 * queues (a cleaned or removed chunk would leave a gap the checkpoint never crosses). The page
 * loads nothing from outside (bull-board's own page asks Google for a font). Built from its dependencies alone (queues, credentials, port) so a
 * test can start it on a scratch prefix; `citizen-staking board` adds the process around it.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ElysiaAdapter } from "@bull-board/elysia";
import { Elysia } from "elysia";
import type { Queues } from "../indexer/queues/queues.ts";
import { EXCLUSIVE_PORT, explainListenError } from "../lib/listen.ts";

export interface BoardCredentials {
  user: string;
  password: string;
}

export interface BoardOptions {
  queues: Pick<Queues, "chunks" | "follow">;
  credentials: BoardCredentials;
  /** 0 picks a free port. */
  port: number;
  /** Keep it on loopback unless a proxy guards it. */
  hostname?: string;
  /** Failed jobs may be retried from the board; every other change stays refused. */
  allowRetries?: boolean;
}

export interface Board {
  url: string;
  port: number;
  stop(): Promise<void>;
}

const CHALLENGE = 'Basic realm="citizen-staking board", charset="UTF-8"';

/**
 * Whether the board serves a request: reads always; of the changes only retries (one job, or all
 * failed jobs of a queue), and only when allowed. bull-board's read-only mode alone would refuse
 * retries too, and without it every change is open.
 */
export function boardRequestAllowed(method: string, path: string, allowRetries: boolean): boolean {
  if (method === "GET" || method === "HEAD") return true;
  const retry = /^\/api\/queues\/[^/]+\/(?:[^/]+\/)?retry(?:\/[^/]+)?$/.test(path);
  return allowRetries && method === "PUT" && retry;
}

/** `<link>`s to other hosts (bull-board's page links a Google font). */
const EXTERNAL_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi;

/** Browsers fetch nothing from elsewhere, whatever a later bull-board adds to its page. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; connect-src 'self'";

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/**
 * Checks an Authorization header against the credentials. Digests have a fixed length, so
 * timingSafeEqual never throws and the time taken says nothing about either value; both halves
 * are compared every time so a right user name is not told apart from a wrong one.
 */
export function basicAuthMatches(header: string | null, credentials: BoardCredentials): boolean {
  const match = header?.match(/^Basic\s+([A-Za-z0-9+/=]+)\s*$/i);
  const decoded = match?.[1] ? Buffer.from(match[1], "base64").toString("utf8") : "";
  const colon = decoded.indexOf(":");
  const user = colon === -1 ? "" : decoded.slice(0, colon);
  const password = colon === -1 ? "" : decoded.slice(colon + 1);
  const userOk = timingSafeEqual(digest(user), digest(credentials.user));
  const passwordOk = timingSafeEqual(digest(password), digest(credentials.password));
  return colon !== -1 && userOk && passwordOk;
}

export async function startBoard({
  queues,
  credentials,
  port,
  hostname = "127.0.0.1",
  allowRetries = false,
}: BoardOptions): Promise<Board> {
  if (!credentials.user || !credentials.password) {
    throw new Error("the board needs a user and a password");
  }
  const serverAdapter = new ElysiaAdapter();
  createBullBoard({
    // Read-only mode hides the buttons; the guard below is what refuses the requests.
    queues: [queues.chunks, queues.follow].map(
      (queue) => new BullMQAdapter(queue, { readOnlyMode: !allowRetries, allowRetries }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: "citizen-staking" } },
  });

  // onRequest runs before routing, so the page, its static files and the API are all guarded.
  const app = new Elysia()
    .onRequest(({ request }) => {
      if (!basicAuthMatches(request.headers.get("authorization"), credentials)) {
        return new Response("authentication required\n", {
          status: 401,
          headers: { "www-authenticate": CHALLENGE, "content-type": "text/plain" },
        });
      }
      const path = new URL(request.url).pathname;
      if (!boardRequestAllowed(request.method, path, allowRetries)) {
        const only = allowRetries
          ? "only retries are allowed"
          : "start it with --allow-retries to retry jobs";
        return Response.json({ error: `the board is read-only: ${only}` }, { status: 405 });
      }
    })
    .mapResponse({ as: "global" }, async ({ response }) => {
      if (!(response instanceof Response)) return;
      const headers = new Headers(response.headers);
      headers.set("content-security-policy", CONTENT_SECURITY_POLICY);
      if (!headers.get("content-type")?.startsWith("text/html")) {
        return new Response(response.body, { status: response.status, headers });
      }
      const page = (await response.text()).replace(EXTERNAL_LINK, "");
      headers.delete("content-length");
      return new Response(page, { status: response.status, headers });
    })
    .use(await serverAdapter.registerPlugin());
  try {
    app.listen({ hostname, port, ...EXCLUSIVE_PORT });
  } catch (error) {
    throw explainListenError(error, { hostname, port, setting: "--port" });
  }

  const boundPort = app.server?.port ?? port;
  return {
    url: `http://${hostname}:${boundPort}`,
    port: boundPort,
    stop: async () => {
      await app.stop();
    },
  };
}
