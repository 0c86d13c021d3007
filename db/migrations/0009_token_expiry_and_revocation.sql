ALTER TABLE "api_tokens" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api_tokens" ADD COLUMN "last_used_at" timestamp with time zone;--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."expires_at" IS 'When the token stops working (token create --expires-in); null: never.';--> statement-breakpoint
COMMENT ON COLUMN "api_tokens"."last_used_at" IS 'The last request that used the token, up to two minutes behind (the API writes it at most once a minute, in batches).';--> statement-breakpoint
-- An open live stream checked its token when it started; a revocation must reach every API
-- instance that holds one. Every instance LISTENs on this channel (api/connections.ts); the payload
-- is the token's id. Sent on commit, so a rolled-back revocation ends nothing.
CREATE FUNCTION "notify_api_token_revoked"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('api_token_revoked', NEW."id"::text);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "api_tokens_notify_revoked"
  AFTER UPDATE OF "revoked_at" ON "api_tokens"
  FOR EACH ROW WHEN (OLD."revoked_at" IS NULL AND NEW."revoked_at" IS NOT NULL)
  EXECUTE FUNCTION "notify_api_token_revoked"();--> statement-breakpoint
COMMENT ON FUNCTION "notify_api_token_revoked"() IS 'NOTIFY api_token_revoked with the token id when a token is revoked; the API ends its open streams.';
