/**
 * What the API sends, typed from the app's own schemas (never copied): the citizen records of
 * api/modules/citizens/model.ts and the stream events of api/modules/stream/model.ts, as JSON
 * delivers them.
 */
import type { Static } from "elysia";
import type {
  CitizenPage as CitizenPageSchema,
  CitizenRecord,
  ListQuery,
  S1Record,
  S2Record,
} from "../api/modules/citizens/model.ts";
import type {
  CitizenEvent as CitizenEventSchema,
  RemovedEvent as RemovedEventSchema,
  ResetEvent as ResetEventSchema,
  SyncedEvent as SyncedEventSchema,
} from "../api/modules/stream/model.ts";

/**
 * A value as JSON.parse gives it: the schemas' uint256 ids are bigints on the server and JSON
 * integers on the wire, so a client holds numbers (exact up to 2^53).
 */
export type Wire<T> = T extends bigint
  ? number
  : T extends (infer Item)[]
    ? Wire<Item>[]
    : T extends object
      ? { [Key in keyof T]: Wire<T[Key]> }
      : T;

export type S1Citizen = Wire<Static<typeof S1Record>>;
export type S2Citizen = Wire<Static<typeof S2Record>>;
export type Citizen = Wire<Static<typeof CitizenRecord>>;
export type CitizenType = Citizen["type"];
export type CitizenPage = Wire<Static<typeof CitizenPageSchema>>;
export type ListOptions = Omit<Static<typeof ListQuery>, "address" | "block" | "limit"> & {
  block?: number | bigint;
  limit?: number;
};

export type CitizenEvent = Wire<Static<typeof CitizenEventSchema>>;
export type RemovedEvent = Static<typeof RemovedEventSchema>;
export type SyncedEvent = Static<typeof SyncedEventSchema>;
export type ResetEvent = Static<typeof ResetEventSchema>;

/** How the stream and a dashboard key a citizen: S1 and S2 ids overlap. */
export const citizenKey = (citizen: { type: CitizenType; id: string }) =>
  `${citizen.type}:${citizen.id}`;
