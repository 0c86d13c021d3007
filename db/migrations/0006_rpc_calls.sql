CREATE TABLE "rpc_calls" (
	"method" text PRIMARY KEY NOT NULL,
	"calls" bigint DEFAULT 0 NOT NULL,
	"since" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
COMMENT ON TABLE "rpc_calls" IS 'JSON-RPC calls the indexer''s processes made, by method, summed over every process that ran workers (added every few seconds and at exit); status divides them by events and citizen stakes.';--> statement-breakpoint
COMMENT ON COLUMN "rpc_calls"."method" IS 'The JSON-RPC method, e.g. eth_call, eth_getLogs.';--> statement-breakpoint
COMMENT ON COLUMN "rpc_calls"."calls" IS 'Calls made (a JSON-RPC batch counts each call; a retried call counts once).';--> statement-breakpoint
COMMENT ON COLUMN "rpc_calls"."since" IS 'When the first call of this method was counted.';
