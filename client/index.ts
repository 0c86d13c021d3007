export {
  type Api,
  type CitizenOptions,
  type ClientOptions,
  createStakingClient,
  type StakingClient,
} from "./client.ts";
export { createHttp, type Fetch, type HttpOptions } from "./http.ts";
export {
  type Change,
  type LiveCitizens,
  STREAM_PATH,
  type WatchOptions,
  watchCitizens,
} from "./live-citizens.ts";
export { ApiProblem, type ProblemDocument } from "./problem.ts";
export type {
  Citizen,
  CitizenEvent,
  CitizenPage,
  CitizenType,
  ListOptions,
  RemovedEvent,
  S1Citizen,
  S2Citizen,
  SyncedEvent,
} from "./types.ts";
export { citizenKey } from "./types.ts";
