import { type Command, InvalidArgumentError } from "commander";
import { createToken, listTokens, revokeToken } from "../../db/tokens.ts";
import { ConfigError } from "../../lib/config.ts";
import { checkServices } from "./support/services.ts";
import { withDatabase } from "./support/with-database.ts";

const DURATION_UNITS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;

/** `30d`, `12h`, `90m`, `45s` in seconds. */
function parseDuration(value: string): number {
  const match = /^([1-9][0-9]{0,5})([smhd])$/.exec(value);
  if (!match) {
    throw new InvalidArgumentError("expected a whole number and a unit, e.g. 30d, 12h, 90m, 45s");
  }
  return Number(match[1]) * DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS];
}

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
    .option(
      "--expires-in <duration>",
      "the token stops working this long from now (30d, 12h, 90m, 45s); never by default",
      parseDuration,
    )
    .action(async (options: { label: string; expiresIn?: number }) => {
      await checkServices({ database: "existing" });
      const created = await withDatabase((db) =>
        createToken(db, options.label, { expiresInSeconds: options.expiresIn }),
      );
      const expiry = created.expiresAt ? `, expires ${created.expiresAt.toISOString()}` : "";
      console.error(
        `token ${created.id} (${created.label}) created${expiry}; store it now, it is not kept:`,
      );
      console.log(created.token);
    });

  token
    .command("list")
    .description("list tokens (ids, labels, state, expiry, last use; never the tokens)")
    .action(async () => {
      await checkServices({ database: "existing" });
      const rows = await withDatabase((db) => listTokens(db));
      for (const row of rows) {
        const state = row.revokedAt
          ? `revoked ${row.revokedAt.toISOString()}`
          : row.expired
            ? "expired"
            : "active";
        const expires = row.expiresAt ? `expires ${row.expiresAt.toISOString()}` : "never expires";
        // Written at most once a minute, in batches (api/modules/auth/usage.ts): up to 2 min behind.
        const used = row.lastUsedAt ? `last used ${row.lastUsedAt.toISOString()}` : "never used";
        console.log(
          `${row.id}\t${row.label}\tcreated ${row.createdAt.toISOString()}\t${state}\t${expires}\t${used}`,
        );
      }
      if (rows.length === 0) console.error("no tokens yet: `token create --label <label>`");
    });

  token
    .command("revoke")
    .description(
      "revoke a token; the API refuses it from the next request on and ends its open streams",
    )
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
