-- A BYTES amount in wei as BYTES, exact and without trailing zeros (2.5, not 2.500000000000000000).
CREATE OR REPLACE FUNCTION "bytes_amount"("wei" numeric) RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN trim_scale("wei" * 0.000000000000000001);--> statement-breakpoint
COMMENT ON FUNCTION "bytes_amount"(numeric) IS 'A BYTES amount in wei (staked_bytes, amount_or_token_id of a BYTES event) as BYTES: exact, no trailing zeros.';
