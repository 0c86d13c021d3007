/**
 * Time bounds of tests. A bound is the timeout the code configures for what is awaited, plus an
 * allowance for a loaded machine: the suite passes with two CPU hogs beside it on two cores,
 * where starting a `bun` command and loading its modules alone took up to 17 s.
 */
import { ANVIL_START_TIMEOUT_MS } from "../../devnet/anvil.ts";

/** What a loaded machine adds to anything awaited: a process start, a reconnect, a request. */
export const LOADED_MACHINE_MS = 30_000;

/** Starting anvil (bounded by its own timeout) and deploying our contracts on it. */
export const DEVNET_SETUP_MS = ANVIL_START_TIMEOUT_MS + 2 * LOADED_MACHINE_MS;
