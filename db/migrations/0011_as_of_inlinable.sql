-- Here staked_citizens_of_wallet_at came in: a wallet's rows as a plain SQL function that
-- Postgres inlines into the API's statement, and staked_citizens_at handed a wallet's rows to it.
-- What both are now is in db/functions/ (a later migration creates them from those files).
SELECT 1;
