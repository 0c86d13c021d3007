/**
 * What a stream sends, as pure functions: a wallet's rows rendered as the single-citizen
 * endpoints' records, the differences from what a client already holds, and their SSE text.
 *
 * One batch is the events that take the client from one block's state to another's; only its
 * closing `synced` event carries an `id`. A client's Last-Event-ID therefore always names a block
 * whose batch it received whole: a connection lost mid-batch resumes from the block before.
 */
import type { StakedCitizen } from "../../../db/schema.ts";
import { type ImageTemplates, recordJson } from "../citizens/record.ts";

export interface Rendered {
  type: "s1" | "s2";
  id: string;
  /** The record as JSON text, exactly as GET /s1/{id} or /s2/{id} serves it. */
  json: string;
}

/** A wallet's citizens keyed by `<type>:<id>` (S1 and S2 ids overlap). */
export type Holding = Map<string, Rendered>;

export function render(rows: StakedCitizen[], images: ImageTemplates): Holding {
  const holding: Holding = new Map();
  for (const row of rows) {
    const type = row.season === 2 ? "s2" : "s1";
    const id = row.citizenId.toString();
    holding.set(`${type}:${id}`, { type, id, json: recordJson(row, images) });
  }
  return holding;
}

const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;

/**
 * The `synced` event that closes a batch and moves the client's Last-Event-ID to
 * `<block>-<hash>`: the hash lets a resume tell whether that block is still on the chain.
 */
export function synced(block: bigint, hash: string | null): string {
  const id = hash === null ? `${block}` : `${block}-${hash}`;
  return `event: synced\nid: ${id}\ndata: {"block":${block}}\n\n`;
}

/** A Last-Event-ID: the block, and its hash when the id came from a `synced` event. */
export interface ResumePoint {
  block: bigint;
  hash?: string;
}

export const LAST_EVENT_ID = /^([0-9]{1,20})(?:-(0x[0-9a-f]{64}))?$/;

export function parseLastEventId(id: string): ResumePoint {
  const [, block, hash] = LAST_EVENT_ID.exec(id)!;
  return hash === undefined ? { block: BigInt(block!) } : { block: BigInt(block!), hash };
}

export function reset(block: bigint): string {
  return event("reset", `{"block":${block}}`);
}

/**
 * The events that turn `held` into `now` at `block` (without the closing `synced`), in key
 * order; empty when nothing differs.
 */
export function differences(held: Holding, now: Holding, block: bigint): string {
  const keys = [...new Set([...held.keys(), ...now.keys()])].sort();
  let text = "";
  for (const key of keys) {
    const before = held.get(key);
    const after = now.get(key);
    if (after === undefined) {
      text += event("removed", `{"block":${block},"type":"${before!.type}","id":"${before!.id}"}`);
    } else if (before?.json !== after.json) {
      text += event("citizen", `{"block":${block},"citizen":${after.json}}`);
    }
  }
  return text;
}
