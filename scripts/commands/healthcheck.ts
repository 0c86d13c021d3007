import type { Command } from "commander";
import { config } from "../../lib/config.ts";
import { Unreachable } from "../../lib/fail.ts";

/** Adds `citizen-staking healthcheck` to `program`; its description is its help text. */
export function addHealthcheckCommand(program: Command): void {
  program
    .command("healthcheck")
    .description(
      "exit 0 when the API on this host answers /healthz (a container's HEALTHCHECK: no curl needed)",
    )
    .action(async () => {
      const url = `http://127.0.0.1:${config.api.port}/healthz`;
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) }).catch(
        (error: Error) => {
          throw new Unreachable(`${url}: ${error.message}`);
        },
      );
      if (response.status !== 200) throw new Unreachable(`${url}: HTTP ${response.status}`);
    });
}
