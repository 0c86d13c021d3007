/**
 * One client's stream of Server-Sent Events (the route in index.ts opens it): the citizens the
 * address has staked, or on a resume what changed since the client's block, then a batch at each
 * block the indexer reaches. It ends when the client goes away or reads too slowly, after a quiet
 * while, when its token expires, or when the module ends it (a revocation, the process stopping).
 */
import { BlockNotIndexed } from "../../../db/as-of.ts";
import type { ImageTemplates } from "../citizens/record.ts";
import { differences, type Holding, type ResumePoint, render, reset, synced } from "./changes.ts";
import type { Hub, Subscriber } from "./hub.ts";
import type { StreamService, WalletState } from "./service.ts";
import type { Slot } from "./slots.ts";

export interface ConnectionDependencies {
  service: StreamService;
  hub: Hub;
  images: ImageTemplates;
  keepAliveMs: number;
  idleMs: number;
  /** Counts the stream among the open ones (those of its token too); returns what uncounts it. */
  track(tokenId: number, close: () => void): () => void;
}

/** Milliseconds a client waits before reconnecting (the SSE `retry` field). */
export const RECONNECT_MS = 1_000;
/** Chunks a client may leave unread before its stream is closed (it resumes when it catches up). */
const MAX_UNREAD = 1_000;
/** A resume's block the standby has still to replay (see `baseline`). */
const NOT_YET = Symbol("not replayed yet");
/** setTimeout's longest delay; a later deadline is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const encoder = new TextEncoder();

/**
 * The stream's body, and a way to end it (the client went away). It also ends when its token
 * is revoked (the caller ends it) or expires: the token was checked once, when the stream began.
 */
export function openConnection(
  dependencies: ConnectionDependencies,
  wallet: string,
  slot: Slot,
  resume: ResumePoint | undefined,
  token: { id: number; expiresInMs: number | null },
) {
  let held: Holding = new Map();
  let started = false;
  let lastSynced: string | undefined;
  let closed = false;
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let idle: ReturnType<typeof setTimeout> | undefined;
  let expiry: ReturnType<typeof setTimeout> | undefined;
  let close = () => {};
  let untrack = () => {};
  const { hub, images, keepAliveMs, idleMs } = dependencies;

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          // The client cancelled the stream between two writes.
          close();
          return;
        }
        if ((controller.desiredSize ?? 0) < -MAX_UNREAD) close();
      };
      const resetIdle = () => {
        clearTimeout(idle);
        idle = setTimeout(() => close(), idleMs);
      };
      const subscriber: Subscriber = {
        wallet,
        async deliver(state: WalletState) {
          if (closed || state.indexedBlock === null) return;
          const block = state.indexedBlock;
          let text = "";
          if (!started) {
            // A failed baseline read throws to the hub, which tries again later; only then
            // does the stream count as started.
            if (resume !== undefined) {
              const known = await baseline(dependencies, wallet, resume, block);
              if (closed || known === NOT_YET) return;
              if (known === undefined) text += reset(block);
              else held = known;
            }
            started = true;
          }
          const now = render(state.citizens, images);
          text += differences(held, now, block);
          held = now;
          // A move without changes still sends `synced`: the client learns how fresh it is,
          // and its Last-Event-ID keeps up, so a resume has less to compare.
          const closing = synced(block, state.blockHash);
          if (text === "" && closing === lastSynced) return;
          write(text + closing);
          lastSynced = closing;
          if (text !== "") resetIdle();
        },
      };
      close = () => {
        if (closed) return;
        closed = true;
        clearInterval(keepAlive);
        clearTimeout(idle);
        clearTimeout(expiry);
        hub.unsubscribe(subscriber);
        untrack();
        slot.release();
        try {
          controller.close();
        } catch {
          // Already closed or cancelled by the client.
        }
      };
      untrack = dependencies.track(token.id, close);
      write(`retry: ${RECONNECT_MS}\n\n`);
      keepAlive = setInterval(() => write(": keep-alive\n\n"), keepAliveMs);
      resetIdle();
      hub.subscribe(subscriber);
      // Last, so that a close at once finds everything it undoes.
      if (token.expiresInMs !== null) {
        const deadline = Date.now() + token.expiresInMs;
        const closeAtExpiry = () => {
          const left = deadline - Date.now();
          if (left <= 0) close();
          else expiry = setTimeout(closeAtExpiry, Math.min(left, MAX_TIMER_MS));
        };
        closeAtExpiry();
      }
    },
    cancel() {
      close();
    },
  });
  return { body, close: () => close() };
}

/**
 * What the client holds, if it can be known: the wallet's rows after its block, when that block
 * is still on the chain the tables hold (its hash matches, or it came bare). Undefined means the
 * client must start over: its block is above the indexed block, or a reorg replaced it, or its
 * hash is pruned (more than HASHES_KEPT blocks ago), or the checkpoint moved back below it
 * since the wallet's read (an operator's rollback): the tables then refuse the block.
 *
 * NOT_YET: answers come from a standby, the client's block is above the standby's and the
 * primary has it (a client resuming from an instance on the primary or on a standby further
 * on): the standby has still to replay it. Starting over would take the client back to an
 * older block, so the stream starts at a later move, once the standby has the block.
 */
async function baseline(
  { service, images }: ConnectionDependencies,
  wallet: string,
  resume: ResumePoint,
  indexedBlock: bigint,
): Promise<Holding | undefined | typeof NOT_YET> {
  if (resume.block > indexedBlock) {
    return (await service.primaryHolds(resume.block)) ? NOT_YET : undefined;
  }
  if (resume.hash !== undefined && (await service.hashOf(resume.block)) !== resume.hash) {
    return undefined;
  }
  try {
    return render(await service.at(wallet, resume.block), images);
  } catch (error) {
    if (error instanceof BlockNotIndexed) return undefined;
    throw error;
  }
}
