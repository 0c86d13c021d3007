import { type Command, InvalidArgumentError } from "commander";
import { createToken, listTokens, revokeToken } from "../../db/tokens.ts";
import { ConfigError } from "../../lib/config.ts";
import { checkServices } from "./support/services.ts";
import { withDatabase } from "./support/with-database.ts";

/** Adds `citizen-staking token create|list|revoke` to `program`. */
export function addTokenCommand(program: Command): void {
  const token = program.command("token").description("bearer tokens of the read API");

  token
    .command("create")
    .description("create a token and print it (the only time it is shown; only its hash is kept)")
    .requiredOption("--label <label>", "who or what the token is for", (value: string) => {
      if (value.trim() === "")
        throw new InvalidArgumentError("a label is required (who or what the token is for)");
      return value.trim();
    })
    .action(async (options: { label: string }) => {
      await checkServices({ database: "existing" });
      const created = await withDatabase((db) => createToken(db, options.label));
      console.error(
        `token ${created.id} (${created.label}) created; store it now, it is not kept:`,
      );
      console.log(created.token);
    });

  token
    .command("list")
    .description("list tokens (ids, labels, dates; never the tokens)")
    .action(async () => {
      await checkServices({ database: "existing" });
      const rows = await withDatabase((db) => listTokens(db));
      for (const row of rows) {
        const state = row.revokedAt ? `revoked ${row.revokedAt.toISOString()}` : "active";
        console.log(`${row.id}\t${row.label}\tcreated ${row.createdAt.toISOString()}\t${state}`);
      }
      if (rows.length === 0) console.error("no tokens yet: `token create --label <label>`");
    });

  token
    .command("revoke")
    .description("revoke a token; the API refuses it from the next request on")
    .argument("<id>", "the token's id from `token list`", (value) => {
      if (!/^[0-9]{1,9}$/.test(value)) throw new InvalidArgumentError("expected a token id");
      return Number(value);
    })
    .action(async (id: number) => {
      await checkServices({ database: "existing" });
      const revoked = await withDatabase((db) => revokeToken(db, id));
      if (!revoked) throw new ConfigError(`no active token with id ${id}`);
      console.log(`token ${id} revoked`);
    });
}
