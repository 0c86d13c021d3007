/**
 * bull-board over the indexer's queues, behind HTTP Basic auth: operators watch and retry chunk
 * and follow jobs in a browser. Built from its dependencies alone (queues, credentials, port) so a
 * test can start it on a scratch prefix; `citizen-staking board` adds the process around it.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ElysiaAdapter } from "@bull-board/elysia";
import { Elysia } from "elysia";
import type { Queues } from "./jobs/queues.ts";

export interface BoardCredentials {
  user: string;
  password: string;
}

export interface BoardOptions {
  queues: Pick<Queues, "chunks" | "follow">;
  credentials: BoardCredentials;
  /** 0 picks a free port. */
  port: number;
  /** The board can retry and remove jobs: keep it on loopback unless a proxy guards it. */
  hostname?: string;
}

export interface Board {
  url: string;
  port: number;
  stop(): Promise<void>;
}

const CHALLENGE = 'Basic realm="citizen-staking board", charset="UTF-8"';

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
}: BoardOptions): Promise<Board> {
  if (!credentials.user || !credentials.password) {
    throw new Error("the board needs a user and a password");
  }
  const serverAdapter = new ElysiaAdapter();
  createBullBoard({
    queues: [new BullMQAdapter(queues.chunks), new BullMQAdapter(queues.follow)],
    serverAdapter,
    options: { uiConfig: { boardTitle: "citizen-staking" } },
  });

  // onRequest runs before routing, so the page, its static files and the API are all guarded.
  const app = new Elysia()
    .onRequest(({ request }) => {
      if (basicAuthMatches(request.headers.get("authorization"), credentials)) return;
      return new Response("authentication required\n", {
        status: 401,
        headers: { "www-authenticate": CHALLENGE, "content-type": "text/plain" },
      });
    })
    .use(await serverAdapter.registerPlugin())
    .listen({ hostname, port });

  const boundPort = app.server?.port ?? port;
  return {
    url: `http://${hostname}:${boundPort}`,
    port: boundPort,
    stop: async () => {
      await app.stop();
    },
  };
}
