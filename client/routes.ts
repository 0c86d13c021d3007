/**
 * The app's routes, the one part of its type Eden Treaty reads (`~Routes`), written out in full
 * wherever declarations are emitted. A function, so that the emitted declaration spells the type
 * out: a type alias would name `App` and, through `createApp`'s parameters, the database, Redis
 * and logger types a client package cannot carry. It is never called, and only its type is
 * imported, so no script holds it.
 */
import type { App as ServerApp } from "../api/app.ts";

export const routesOf = (app: unknown) => (app as ServerApp)["~Routes"];

export type Routes = ReturnType<typeof routesOf>;
