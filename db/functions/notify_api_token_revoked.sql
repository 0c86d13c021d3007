-- An open live stream checked its token when it started; a revocation must reach every API
-- instance that holds one. Every instance LISTENs on this channel (api/connections.ts); the payload
-- is the token's id. Sent on commit, so a rolled-back revocation ends nothing.
CREATE OR REPLACE FUNCTION "notify_api_token_revoked"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('api_token_revoked', NEW."id"::text);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE OR REPLACE TRIGGER "api_tokens_notify_revoked"
  AFTER UPDATE OF "revoked_at" ON "api_tokens"
  FOR EACH ROW WHEN (OLD."revoked_at" IS NULL AND NEW."revoked_at" IS NOT NULL)
  EXECUTE FUNCTION "notify_api_token_revoked"();--> statement-breakpoint
COMMENT ON FUNCTION "notify_api_token_revoked"() IS 'NOTIFY api_token_revoked with the token id when a token is revoked; the API ends its open streams.';
