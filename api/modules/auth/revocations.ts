/**
 * Revoked tokens as the primary announces them. Answers, token checks included, may be read
 * from a hot standby (DATABASE_READ_URL) whose rows lag the primary's: there a revoked token
 * would keep working until the standby replays the revocation, which a paused or cut-off standby
 * may not do for a long time. So each instance keeps the ids of revoked tokens, heard by LISTEN
 * on the primary (db/functions/notify_api_token_revoked.sql), and admission refuses them whatever the statement
 * read: a revocation holds from its notification on, milliseconds after its commit, however far
 * behind the standby is, and a request pays a set lookup for it, not a query.
 *
 * When the listener (re)connects, notifications sent meanwhile are lost, so the ids are read
 * again from the primary. A token is never un-revoked, so ids are only added: one number per
 * revoked token ever.
 */
import { isNotNull } from "drizzle-orm";
import type { Logger } from "pino";
import type { Database } from "../../../db/client.ts";
import { apiTokens } from "../../../db/schema.ts";

export function createRevocations({ primary, log }: { primary: Database; log: Logger }) {
  const revoked = new Set<number>();
  const everRevoked = primary
    .select({ id: apiTokens.id })
    .from(apiTokens)
    .where(isNotNull(apiTokens.revokedAt))
    .prepare("api_tokens_revoked");

  return {
    has: (tokenId: number) => revoked.has(tokenId),
    /** The revocation listener's callback: a token's id, or none when it (re)connected. */
    heard(tokenId?: number) {
      if (tokenId !== undefined) {
        revoked.add(tokenId);
        return;
      }
      everRevoked.execute().then(
        (rows) => {
          for (const row of rows) revoked.add(row.id);
        },
        (error: unknown) =>
          // The listener's next reconnect reads them again; meanwhile the rows read decide.
          log.warn(
            { err: error instanceof Error ? error.message : String(error) },
            "cannot read the revoked tokens after the revocation listener connected",
          ),
      );
    },
  };
}
